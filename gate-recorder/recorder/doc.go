// Package recorder is gate-recorder: the drain of the relays' kv handover
// into PostgreSQL (every flush period), the once-a-minute queue snapshot
// sampler for graphs with counters on, and the hourly retention. Build a
// Recorder with New, run it with Start and end it with Stop (or the end of
// Start's context), as every Gate service (package libs/service); Tick,
// Drain, Sample and Prune are single passes a test drives on a virtual
// clock.
package recorder
