// Package stack starts a local Gate stack as processes — miniqueen (unless a
// broker already answers), NATS (the local server, else an embedded one),
// gate-api and one or more gate-relay replicas — waits for their health,
// exposes their URLs, kills and restarts relays on demand (for chaos and
// replica runs) and stops everything it started, process groups included.
//
// It is what `make run`, `gate-e2e --embedded` and `gate-bench --embedded`
// use, so a fresh clone needs nothing running to try Gate end to end.
package stack
