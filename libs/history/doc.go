// Package history is Gate's PostgreSQL memory: opening the database the
// PG_ knobs name, applying the embedded goose migrations (package
// migrations) under a session lock, and the typed reads and writes of every
// table of gate-runtime §5.5 and §6.2 — minute roll-ups, denial traces,
// per-second Watch samples and their recorders, queue snapshots and
// configuration annotations — plus retention (day partitions of the
// samples created ahead and dropped when expired).
//
// Without PG_HOST there is no history and nothing here is used: Gate limits
// exactly as well. The relay never imports this package (it never links
// pgx); relays hand their observations to gate-recorder through Queen kv
// and gate-recorder writes them here.
//
// Every write is idempotent under replay: samples replace per (recorder,
// path, second), recorder rows keep the greatest through and lost, roll-ups
// add the change of a source's per-minute total (so independent replicas
// add up and the same handover applied twice adds nothing), traces insert
// once per ref.
package history
