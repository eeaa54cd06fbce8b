package clock

import (
	"container/heap"
	"sync"
	"time"
)

// Virtual is a Clock that moves only when told to (Advance, Set), for
// tests: every timer, ticker and AfterFunc made from it fires, in time
// order, as the clock passes its moment. The zero value is not usable;
// build one with NewVirtual. It is safe for concurrent use.
type Virtual struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	pending waitHeap
	// changed is closed and replaced whenever a wait is added, so a test
	// can block until the code under test has started waiting.
	changed chan struct{}
}

// NewVirtual returns a virtual clock standing at start.
func NewVirtual(start time.Time) *Virtual {
	return &Virtual{now: start, changed: make(chan struct{})}
}

// Now is the clock's current time.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// Since is Now().Sub(t).
func (v *Virtual) Since(t time.Time) time.Duration { return v.Now().Sub(t) }

// NewTimer makes a timer that fires when the clock reaches now+d.
func (v *Virtual) NewTimer(d time.Duration) Timer {
	w := &wait{clock: v, ch: make(chan time.Time, 1)}
	v.schedule(w, d)
	return (*virtualTimer)(w)
}

// AfterFunc makes a timer that runs f in its own goroutine when the clock
// reaches now+d.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	w := &wait{clock: v, fn: f}
	v.schedule(w, d)
	return (*virtualTimer)(w)
}

// NewTicker makes a ticker that ticks every d of virtual time.
func (v *Virtual) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	w := &wait{clock: v, ch: make(chan time.Time, 1), period: d}
	v.schedule(w, d)
	return (*virtualTicker)(w)
}

// Advance moves the clock forward by d, firing every wait that falls due
// on the way, each at its own moment and in time order (ties in the order
// they were made). It returns when every channel has been sent to and
// every AfterFunc started.
func (v *Virtual) Advance(d time.Duration) {
	v.mu.Lock()
	target := v.now.Add(d)
	v.mu.Unlock()
	v.Set(target)
}

// Set moves the clock to t, firing what falls due on the way (as Advance).
// A t before the current time only moves the clock back; nothing fires.
func (v *Virtual) Set(t time.Time) {
	for {
		v.mu.Lock()
		if len(v.pending) == 0 || v.pending[0].at.After(t) {
			v.now = t
			v.mu.Unlock()
			return
		}
		w := heap.Pop(&v.pending).(*wait)
		w.index = -1
		if w.at.After(v.now) {
			v.now = w.at
		}
		at := w.at
		if w.period > 0 {
			w.at = w.at.Add(w.period)
			v.seq++
			w.seq = v.seq
			heap.Push(&v.pending, w)
		}
		v.mu.Unlock()
		w.fire(at)
	}
}

// Pending is the number of timers, tickers and AfterFuncs waiting.
func (v *Virtual) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.pending)
}

// Next is when the earliest pending wait falls due; false when none waits.
func (v *Virtual) Next() (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.pending) == 0 {
		return time.Time{}, false
	}
	return v.pending[0].at, true
}

// WaitForPending blocks until at least n waits are pending or done is
// closed; it reports whether n were reached. Tests use it to know that the
// code under test has started waiting before they move the clock.
func (v *Virtual) WaitForPending(n int, done <-chan struct{}) bool {
	for {
		v.mu.Lock()
		if len(v.pending) >= n {
			v.mu.Unlock()
			return true
		}
		ch := v.changed
		v.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

func (v *Virtual) schedule(w *wait, d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.scheduleLocked(w, d)
}

func (v *Virtual) scheduleLocked(w *wait, d time.Duration) {
	w.at = v.now.Add(max(d, 0))
	v.seq++
	w.seq = v.seq
	heap.Push(&v.pending, w)
	close(v.changed)
	v.changed = make(chan struct{})
}

// stop removes w from the pending set; it reports whether it was there.
func (v *Virtual) stop(w *wait) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if w.index < 0 {
		return false
	}
	heap.Remove(&v.pending, w.index)
	w.index = -1
	return true
}

func (v *Virtual) reset(w *wait, d time.Duration) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	was := w.index >= 0
	if was {
		heap.Remove(&v.pending, w.index)
		w.index = -1
	}
	v.scheduleLocked(w, d)
	return was
}

// wait is one pending timer, ticker or AfterFunc.
type wait struct {
	clock  *Virtual
	at     time.Time
	seq    uint64
	index  int
	period time.Duration
	ch     chan time.Time
	fn     func()
}

func (w *wait) fire(at time.Time) {
	if w.fn != nil {
		go w.fn()
		return
	}
	// As with time.Timer and time.Ticker, a tick nobody took yet is not
	// queued behind another.
	select {
	case w.ch <- at:
	default:
	}
}

type virtualTimer wait

func (t *virtualTimer) C() <-chan time.Time { return t.ch }
func (t *virtualTimer) Stop() bool          { return t.clock.stop((*wait)(t)) }
func (t *virtualTimer) Reset(d time.Duration) bool {
	w := (*wait)(t)
	// A fired, unread value is dropped, as time.Timer does since Go 1.23.
	if w.ch != nil {
		select {
		case <-w.ch:
		default:
		}
	}
	return t.clock.reset(w, d)
}

type virtualTicker wait

func (t *virtualTicker) C() <-chan time.Time { return t.ch }
func (t *virtualTicker) Stop()               { t.clock.stop((*wait)(t)) }
func (t *virtualTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	w := (*wait)(t)
	w.clock.mu.Lock()
	w.period = d
	w.clock.mu.Unlock()
	w.clock.reset(w, d)
}

// waitHeap orders waits by when they fall due, then by when they were
// made.
type waitHeap []*wait

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *waitHeap) Push(x any) {
	w := x.(*wait)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}
