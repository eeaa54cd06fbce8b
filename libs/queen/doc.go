// Package queen is the Go client for the QueenMQ broker's HTTP API — queues,
// push, pop (claim), ack, lease renewal, the transaction wire, KV, consumer
// groups, the dead-letter listing and the depth route — speaking exactly the
// wire documented in shared/spec/queen-wire.md.
//
// Business verdicts that arrive as HTTP 200 with a flag are typed results the
// caller must look at, never errors: a duplicate push (PushResult.Duplicate),
// an ack that did not apply (AckResult.Success), a KV write that lost its
// precondition (KVResult.Applied, Reason), a KV call or transaction rolled
// back as a whole (KVResponse.Refusal, TxnResult.Refusal with Reason,
// KVReason and FailedIndex), an empty claim (Claim.Empty). Transport failures
// and 4xx/5xx answers are errors; a broker answer is a *Error (status,
// route, code, reason, message, Retry-After) that IsNotFound, IsBadRequest,
// IsRateLimited, IsUnavailable, StatusOf, RetryAfter, CodeOf and ReasonOf
// inspect through any wrapping.
//
// Wire facts this package had to guess (the spec marks them unconfirmed):
//
//   - DELETE /api/v1/resources/queues/:queue answers a body with a boolean
//     "deleted"; the client reads it and keeps the raw body.
//   - GET /api/v1/resources/queues/:queue: only partitions[].name,
//     partitions[].stats.pending and retentionSeconds (under "queue" or at
//     the top level) are decoded; the raw body is kept.
//   - Seek, partition seek, subscription and consumer-group delete answers
//     carry "success"; other keys are kept raw. The partition seek is sent
//     with no body.
//   - A refused configure (HTTP 200 with {"error": …}) is an *Error with
//     Status 200 and Code "configure_refused", the way the Rust client turns
//     it into an error.
//   - A pop answering HTTP 200 with "success": false is a broker-side failure
//     and is an *Error with Status 200 and Code "pop_failed"; an empty claim
//     (204, an empty body, "messages": []) is not.
//   - The single-key KV routes (PUT/DELETE /api/v1/kv/:ns/*key) answer a lost
//     "required" precondition with the batch refusal envelope; the client
//     folds it into a KVResult with Applied false and Reason = kvReason.
//   - A refusal envelope whose detail was cut (only ok/reason left) reports
//     FailedIndex -1.
//   - Seek and subscription timestamps are sent as UTC with milliseconds and
//     "Z" (FormatTimestamp).
//   - Older brokers' answers (met on a Queen 0.15.1; queen-wire §0.1: the
//     client tolerates both, miniqueen speaks the newest): an empty pop as
//     200 {"success": false, "error": "no_available_partition"} or
//     "lease_held" is an empty Claim; an unknown queue's detail as 200
//     {"error": "… not found"} is IsNotFound (CodeNotFound); a lease extend
//     answered with an array of per-claim results is summed into one
//     LeaseExtension.
//
// Behaviour chosen for the client:
//
//   - No automatic retries at all, for reads too: a transport failure or a
//     non-2xx status goes back to the caller; lease redelivery and the
//     caller's transaction ids are the recovery path. (Go's transport may
//     still resend a request that provably never reached the wire.)
//   - The client never mints transaction ids on its own; NewTransactionID
//     returns a UUIDv7 for callers that want the SDK behaviour.
//   - An ack whose Status is empty is sent as "completed" (the broker counts
//     an explicit "" as failed).
//   - A long-poll pop's HTTP call is bounded by ctx and by its timeout (30 s
//     when unset) plus 5 s, so the broker's timer fires first.
//   - Hot-path bodies are written by hand and the claim, transaction and KV
//     answers are read by Gate's one JSON scanner (internal/jsonkit), which
//     mirrors encoding/json (checked by differential fuzz tests); a claim's
//     message payloads share one copy of the answer body.
//   - A call is a copy of one request template with the client's header
//     maps (shared, never written), sent straight to the transport unless
//     the http.Client has an overall Timeout or a cookie Jar (then through
//     it); a broker route never redirects, so a 3xx is an answer. The hot
//     routes' URLs are parsed once, and PreparePop builds a pop's route,
//     query and URL once for a caller that pops the same request in a loop.
//   - SyncTransport (what gate-relay's stages use; the default is
//     NewTransport) writes each plain-HTTP/1.1 call whole and reads its
//     answer on the calling goroutine, with no reader and writer goroutine
//     per connection; it resends a request only when it cannot have reached
//     the broker (a pooled connection is peeked at before it is used).
package queen
