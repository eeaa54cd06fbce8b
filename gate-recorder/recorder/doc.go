// Package recorder is gate-recorder: the drain of the relays' kv handover
// into PostgreSQL (every flush period), the once-a-minute queue snapshot
// sampler for graphs with counters on, and the hourly retention. Build a
// Recorder with New, run it with Start, stop it by cancelling Start's
// context (Stopped closes when it has finished); Drain, Sample and Prune
// are single passes a test drives with a virtual clock.
package recorder
