// Package denial keeps a relay's recent budget refusals in a bounded,
// process-wide ring (drop-oldest). Admissions are counted, never traced.
package denial
