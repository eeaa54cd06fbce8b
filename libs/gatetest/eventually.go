package gatetest

import (
	"testing"
	"time"
)

// Polling intervals: start quick, back off to a ceiling so a long timeout does
// not spin.
const (
	pollFirst = 2 * time.Millisecond
	pollMax   = 100 * time.Millisecond
)

// Eventually calls fn until it returns true, failing t if that has not happened
// within timeout. It polls from 2 ms, doubling to at most 100 ms between calls,
// and always calls fn at least once. Call it from the test goroutine (it may
// call t.Fatalf).
func Eventually(t testing.TB, timeout time.Duration, fn func() bool) {
	t.Helper()
	if !poll(timeout, fn) {
		t.Fatalf("eventually: condition not met within %v", timeout)
	}
}

// EventuallyErr calls fn until it returns nil, failing t with fn's last error
// if that has not happened within timeout. It polls like Eventually.
func EventuallyErr(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	var last error
	if !poll(timeout, func() bool { last = fn(); return last == nil }) {
		t.Fatalf("eventually: not nil within %v; last error: %v", timeout, last)
	}
}

// poll runs cond until it reports true (poll answers true) or timeout passes
// (poll answers false).
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := pollFirst
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(wait, left))
		wait = min(wait*2, pollMax)
	}
}
