// Package capability says whether a broker is the broker Gate needs. Gate
// relies on four things no older Queen has, and a broker without them
// answers Gate's calls in ways that look like quiet failures (a 404 on
// every reconcile, partitions leased until their lease lapses), so both
// gate-relay and gate-api probe them at start and after every reconnect, on
// a scratch queue and scratch kv keys: kv incr with max (the limiter),
// transaction riders (optional: admission falls back to a kv call), the
// depth route (backlogs and ETAs), and the cumulative ack the settle relies
// on (acking a claim's last message settles the whole claim and releases
// its lease). A Report names what is missing and the fix; /health answers
// 503 with it, the process logs it once at ERROR, and gate-api refuses a
// declaration before provisioning anything.
package capability
