package stage

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/queen"
)

// pollRecorder records the timeout of every long-poll sent through it.
type pollRecorder struct {
	next     http.RoundTripper
	mu       sync.Mutex
	timeouts []time.Duration
}

func (p *pollRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if q.Get("wait") == "true" {
		ms, err := strconv.ParseInt(q.Get("timeout"), 10, 64)
		if err != nil {
			ms = -1
		}
		p.mu.Lock()
		p.timeouts = append(p.timeouts, time.Duration(ms)*time.Millisecond)
		p.mu.Unlock()
	}
	return p.next.RoundTrip(req)
}

func (p *pollRecorder) sent() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.timeouts...)
}

// Workers that start together do not time out together: each worker's
// first parked long-poll asks the broker for a timeout in the second half
// of PollTimeout, spread over the workers; once it ends (the broker's clock
// moved past it, no item came), every later poll asks for the whole
// PollTimeout.
func TestTheFirstLongPollsOfWorkersStartedTogetherEndAtSpreadTimes(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, riders: true})
	rec := &pollRecorder{next: queen.NewTransport()}
	c, err := queen.New(r.mini.URL(), queen.WithHTTPClient(&http.Client{Transport: rec}))
	if err != nil {
		t.Fatal(err)
	}
	const workers = 16
	const poll = time.Minute
	cfg := r.s.cfg
	cfg.Client, cfg.PollTimeout, cfg.Clock = c, poll, clock.NewVirtual(r.mini.Now())
	cfg.Stage.Concurrency = workers
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })

	eventually(t, "every worker parks its first long-poll", func() bool { return len(rec.sent()) == workers && r.mini.Parked() == workers })
	first := rec.sent()
	distinct := map[time.Duration]bool{}
	for i, d := range first {
		if d < poll/2 || d > poll {
			t.Fatalf("first long-poll %d asks for a %s timeout, want one in [%s, %s]", i, d, poll/2, poll)
		}
		distinct[d] = true
	}
	if len(distinct) < workers/2 {
		t.Fatalf("the %d workers' first long-polls ask for only %d distinct timeouts %v: they would end together", workers, len(distinct), first)
	}

	// The broker's clock passes the whole poll timeout: every first poll
	// ends empty and the next one asks for the whole PollTimeout.
	r.mini.FastForward(poll)
	eventually(t, "every worker parks its second long-poll", func() bool { return len(rec.sent()) == 2*workers && r.mini.Parked() == workers })
	for i, d := range rec.sent()[workers:] {
		if d != poll {
			t.Fatalf("later long-poll %d asks for a %s timeout, want the whole %s", i, d, poll)
		}
	}
}
