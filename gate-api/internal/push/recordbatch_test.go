package push

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/store"
)

// Records arriving while every kv call is in flight leave together in
// the next call, each answered with that call's outcome; a failed call
// fails exactly its own records.
func TestRecordBatcherCoalesces(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	fail := true
	b := &recordBatcher{put: func(ctx context.Context, puts []store.ItemPut) error {
		<-release
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(puts))
		if len(puts) == 1 && puts[0].TxnID == "t-0" && fail {
			fail = false
			return errors.New("the broker refused the call")
		}
		return nil
	}}
	const first = recordCallSlots // each alone in a call of its own
	errs := make([]error, first+10)
	var wg sync.WaitGroup
	put := func(i int) {
		defer wg.Done()
		errs[i] = b.Put(context.Background(), store.ItemPut{TxnID: "t-" + strconv.Itoa(i)})
	}
	wg.Add(first)
	for i := range first {
		go put(i)
	}
	for b.busyNow() < first {
		time.Sleep(time.Millisecond)
	}
	wg.Add(10)
	for i := first; i < first+10; i++ {
		go put(i)
	}
	for b.queuedNow() < 10 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if b.calls.Load() != first+1 || b.items.Load() != first+10 {
		t.Fatalf("%d calls carried %d records (sizes %v), want %d carrying %d: the 10 queued in one", b.calls.Load(), b.items.Load(), sizes, first+1, first+10)
	}
	if errs[0] == nil {
		t.Fatal("t-0's failed call answered it nil")
	}
	for i := 1; i < first+10; i++ {
		if errs[i] != nil {
			t.Fatalf("t-%d: %v", i, errs[i])
		}
	}
}

func (b *recordBatcher) busyNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy
}

func (b *recordBatcher) queuedNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}
