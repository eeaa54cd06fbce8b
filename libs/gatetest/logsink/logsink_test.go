package logsink

import (
	"sync"
	"testing"
)

func TestSinkCountsMessagesWrittenFromManyGoroutines(t *testing.T) {
	var s Sink
	log := s.JSON()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				log.Info("tick", "n", 1)
			}
			log.Debug("done")
		}()
	}
	wg.Wait()
	if n := s.Count("tick"); n != 200 {
		t.Fatalf("Count(tick) = %d, want 200", n)
	}
	if !s.Has("done") || s.Has("never") {
		t.Fatalf("Has: done %v, never %v", s.Has("done"), s.Has("never"))
	}
}
