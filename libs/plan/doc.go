// Package plan is the compiled form of a Gate graph — queues, consumer
// groups, kv keys, per-path ceilings, stages — and the one place every name
// Gate uses on the broker is minted.
package plan
