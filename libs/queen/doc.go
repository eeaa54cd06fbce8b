// Package queen is the Go client for the QueenMQ broker's HTTP API: queues,
// push, pop (claim), ack, lease renewal, the transaction wire, KV, consumer
// groups and the depth route, speaking exactly the wire that
// /work/shared/spec/queen-wire.md documents.
//
// Wire facts this package had to guess (the spec marks them unconfirmed):
//
//   - DELETE /api/v1/resources/queues/:queue answers a body with a boolean
//     "deleted" flag; the client reads "deleted" and keeps the raw body.
//   - GET /api/v1/resources/queues/:queue: only partitions[].name,
//     partitions[].stats.pending and retentionSeconds (under "queue" or at
//     the top level) are decoded; the raw body is kept.
//   - Seek, subscription and consumer-group delete answers carry "success";
//     other keys are kept raw.
//   - A refused configure (HTTP 200 with {"error": …}) is reported as an
//     *Error with Status 200 and Code "configure_refused", the way the Rust
//     client turns it into an error.
//   - A pop answering HTTP 200 with "success": false is a broker-side
//     failure and is reported as an *Error with Status 200 and Code
//     "pop_failed"; an empty claim (204, empty body, "messages": []) is not.
//   - The single-key KV routes (PUT/DELETE /api/v1/kv/:ns/*key) answer a lost
//     "required" precondition with the batch refusal envelope; the client
//     folds it into a KVResult with Applied false and Reason = kvReason.
//   - A refusal envelope whose detail was cut (only ok/reason left) reports
//     FailedIndex -1.
//
// Behaviour chosen for the client:
//
//   - No automatic retries at all. A transport failure or a non-2xx status is
//     returned to the caller as is; the broker's own lease redelivery and the
//     caller's transaction ids are the recovery path. (Go's transport may
//     still resend a request that provably never reached the wire.)
//   - The client never mints transaction ids on its own; NewTransactionID
//     returns a UUIDv7 for callers that want the SDK behaviour.
//   - An ack whose Status is empty is sent as "completed" (the broker counts
//     an explicit "" as failed).
package queen
