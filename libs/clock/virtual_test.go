package clock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

func received(ch <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-ch:
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestVirtualTimerFiresOnlyWhenTheClockReachesItsMoment(t *testing.T) {
	v := NewVirtual(t0)
	tm := v.NewTimer(5 * time.Second)
	v.Advance(4999 * time.Millisecond)
	if _, ok := received(tm.C()); ok {
		t.Fatal("the timer fired 1 ms before its moment")
	}
	v.Advance(time.Millisecond)
	at, ok := received(tm.C())
	if !ok || !at.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("at its moment the timer gave %v, %v; want %v", at, ok, t0.Add(5*time.Second))
	}
	if v.Pending() != 0 {
		t.Fatalf("a fired timer is still pending (%d)", v.Pending())
	}
}

func TestVirtualStopAndResetReportLikeTimeTimer(t *testing.T) {
	v := NewVirtual(t0)
	tm := v.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if tm.Stop() {
		t.Fatal("a second Stop reported true")
	}
	v.Advance(time.Hour)
	if _, ok := received(tm.C()); ok {
		t.Fatal("a stopped timer fired")
	}
	if tm.Reset(2 * time.Second) {
		t.Fatal("Reset of a stopped timer reported it pending")
	}
	v.Advance(time.Second)
	if _, ok := received(tm.C()); ok {
		t.Fatal("a reset timer fired early")
	}
	if !tm.Reset(time.Second) {
		t.Fatal("Reset of a pending timer reported false")
	}
	v.Advance(time.Second)
	if at, ok := received(tm.C()); !ok || !at.Equal(t0.Add(time.Hour+2*time.Second)) {
		t.Fatalf("reset timer gave %v, %v", at, ok)
	}
}

func TestVirtualWaitsFireInTimeOrderAtTheirOwnMoment(t *testing.T) {
	v := NewVirtual(t0)
	var order []string
	ch := make(chan string, 3)
	v.AfterFunc(3*time.Second, func() { ch <- "c" })
	a := v.NewTimer(time.Second)
	v.AfterFunc(2*time.Second, func() { ch <- "b" })
	v.Advance(10 * time.Second)
	at, ok := received(a.C())
	if !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("the 1 s timer gave %v, %v", at, ok)
	}
	for range 2 {
		order = append(order, <-ch)
	}
	if len(order) != 2 {
		t.Fatalf("AfterFuncs ran %v", order)
	}
	if !v.Now().Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("Now after Advance(10s) = %v", v.Now())
	}
}

func TestVirtualTickerTicksEveryPeriodAndStops(t *testing.T) {
	v := NewVirtual(t0)
	tk := v.NewTicker(time.Second)
	var got []time.Time
	for range 3 {
		v.Advance(time.Second)
		at, ok := received(tk.C())
		if !ok {
			t.Fatalf("no tick after %d advances", len(got)+1)
		}
		got = append(got, at)
	}
	for i, at := range got {
		if want := t0.Add(time.Duration(i+1) * time.Second); !at.Equal(want) {
			t.Fatalf("tick %d at %v, want %v", i, at, want)
		}
	}
	tk.Reset(5 * time.Second)
	v.Advance(4 * time.Second)
	if _, ok := received(tk.C()); ok {
		t.Fatal("a ticker reset to 5 s ticked after 4 s")
	}
	v.Advance(time.Second)
	if _, ok := received(tk.C()); !ok {
		t.Fatal("a ticker reset to 5 s did not tick after 5 s")
	}
	tk.Stop()
	v.Advance(time.Minute)
	if _, ok := received(tk.C()); ok {
		t.Fatal("a stopped ticker ticked")
	}
	if v.Pending() != 0 {
		t.Fatalf("a stopped ticker is still pending")
	}
}

func TestVirtualTickerDropsTicksNobodyRead(t *testing.T) {
	v := NewVirtual(t0)
	tk := v.NewTicker(time.Second)
	defer tk.Stop()
	v.Advance(10 * time.Second)
	first, ok := received(tk.C())
	if !ok || !first.Equal(t0.Add(time.Second)) {
		t.Fatalf("the first unread tick is %v, %v; want the first period's", first, ok)
	}
	if _, ok := received(tk.C()); ok {
		t.Fatal("ticks nobody read were queued")
	}
}

func TestSleepEndsWithTheClockOrTheContext(t *testing.T) {
	v := NewVirtual(t0)
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), v, time.Minute) }()
	if !v.WaitForPending(1, nil) {
		t.Fatal("Sleep never started waiting")
	}
	v.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatalf("Sleep after a minute of virtual time: %v", err)
	}

	cause := errors.New("stopped by the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { done <- Sleep(ctx, v, time.Hour) }()
	v.WaitForPending(1, nil)
	cancel(cause)
	if err := <-done; !errors.Is(err, cause) {
		t.Fatalf("Sleep on a cancelled context returned %v, want its cause", err)
	}
	if v.Pending() != 0 {
		t.Fatal("a cancelled Sleep left its timer pending")
	}
}

func TestRealClockTimersFire(t *testing.T) {
	c := Or(nil)
	var ran atomic.Bool
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { ran.Store(true); close(done) })
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	<-done
	if !ran.Load() {
		t.Fatal("AfterFunc did not run")
	}
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
	if c.Since(c.Now().Add(-time.Second)) < time.Second {
		t.Fatal("Since is shorter than the time passed")
	}
}
