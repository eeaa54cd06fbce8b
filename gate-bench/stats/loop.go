package stats

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Call is one request of a load driver: it returns the HTTP status (0 for a
// transport error) and how many units it carried (items in a pop, 1 for a
// push).
type Call func(ctx context.Context) (status, units int)

// Result is one row of a load run.
type Result struct {
	// Label names the row (e.g. "closed c=32" or "open 1500/s").
	Label string
	// Requests and Units are counted after the warm-up.
	Requests, Units int
	Seconds         float64
	Latency         Summary
	Statuses        map[int]int
	Errors          int
	// Slipped counts open-loop sends more than 50 ms behind schedule;
	// Capped counts sends skipped because MaxInFlight was reached.
	Slipped, Capped int
}

// ReqPerSec is Requests / Seconds.
func (r Result) ReqPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Seconds
}

// UnitsPerSec is Units / Seconds.
func (r Result) UnitsPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Units) / r.Seconds
}

// OK reports the share of 2xx statuses.
func (r Result) OK() float64 {
	if r.Requests == 0 {
		return 0
	}
	n := 0
	for s, c := range r.Statuses {
		if s >= 200 && s < 300 {
			n += c
		}
	}
	return float64(n) / float64(r.Requests)
}

// ClosedLoop keeps conc calls in flight for warmup + d and measures the
// part after warmup. Latency is per call; a closed loop finds saturation and
// understates latency (a slow call delays the next).
func ClosedLoop(ctx context.Context, label string, conc int, warmup, d time.Duration, call Call) Result {
	return ClosedLoopUntil(ctx, label, conc, warmup, d, call, nil)
}

// ClosedLoopUntil is ClosedLoop that also ends the measurement as soon as
// done reports true (checked every 10 ms), e.g. when a backlog is drained,
// so the rate is over the time the work actually took.
func ClosedLoopUntil(ctx context.Context, label string, conc int, warmup, d time.Duration, call Call, done func() bool) Result {
	var rec Recorder
	var measuring atomic.Bool
	var units atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				st, u := call(ctx)
				if ctx.Err() != nil {
					return
				}
				if measuring.Load() {
					rec.Record(time.Since(t0), st)
					units.Add(int64(u))
				}
			}
		}()
	}
	sleep(ctx, warmup)
	measuring.Store(true)
	start := time.Now()
	if done == nil {
		sleep(ctx, d)
	} else {
		for end := start.Add(d); time.Now().Before(end) && ctx.Err() == nil && !done(); {
			sleep(ctx, 10*time.Millisecond)
		}
	}
	measuring.Store(false)
	secs := time.Since(start).Seconds()
	cancel()
	wg.Wait()
	s, st, errs := rec.Take()
	return Result{Label: label, Requests: len(s), Units: int(units.Load()), Seconds: secs, Latency: Summarize(s), Statuses: st, Errors: errs}
}

// OpenLoop sends at rate per second for warmup + d regardless of how the
// server keeps up, measuring latency from each send's due time (so queueing
// in the driver counts, which is the honest latency). At most maxInFlight
// calls run at once; a due send over that cap is skipped and counted.
func OpenLoop(ctx context.Context, label string, rate float64, maxInFlight int, warmup, d time.Duration, call Call) Result {
	var rec Recorder
	var units atomic.Int64
	var slipped, capped atomic.Int64
	sem := make(chan struct{}, maxInFlight)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(d)
	var wg sync.WaitGroup
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(end) || ctx.Err() != nil {
			break
		}
		if w := time.Until(due); w > 0 {
			sleep(ctx, w)
		}
		measured := !due.Before(measureFrom)
		if time.Since(due) > 50*time.Millisecond && measured {
			slipped.Add(1)
		}
		select {
		case sem <- struct{}{}:
		default:
			if measured {
				capped.Add(1)
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			st, u := call(ctx)
			if measured {
				rec.Record(time.Since(due), st)
				units.Add(int64(u))
			}
		}()
	}
	wg.Wait()
	s, st, errs := rec.Take()
	return Result{Label: label, Requests: len(s), Units: int(units.Load()), Seconds: d.Seconds(), Latency: Summarize(s),
		Statuses: st, Errors: errs, Slipped: int(slipped.Load()), Capped: int(capped.Load())}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
