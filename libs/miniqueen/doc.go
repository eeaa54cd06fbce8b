// Package miniqueen is an in-memory, Queen-compatible HTTP broker for tests
// and local runs: the routes, JSON shapes, status codes and semantics of the
// QueenMQ subset that Gate uses (push, pop with leases, ack, the transaction
// wire, KV, depth and consumer groups), with an injected clock, fault
// injection and direct state access in the spirit of miniredis. It is never a
// production path: production runs the real Queen broker (>= 1.0.4).
package miniqueen
