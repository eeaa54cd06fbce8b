// Package clock is the one notion of time every Gate piece is given: the
// wall clock in production, a virtual clock in tests, so that park waits,
// backoffs, status periods, flush tickers and reconcile loops run in
// virtual time and a suite never sleeps to see a timer fire.
//
// The windows themselves are not here: they are the broker's kv TTLs.
// What a Clock governs is each process's own waiting.
package clock
