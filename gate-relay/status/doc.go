// Package status shares a relay replica's state with the other binaries:
// it writes the replica's status document to Queen kv on a short period
// (with a TTL of three periods, so a dead replica disappears), and, when a
// NATS connection is given, publishes counter snapshots and new denials on
// NATS subjects for the console's live view.
//
// Subjects (tokens are application and graph names, [a-z0-9-]):
//
//	gate.relay.counters.{app}.{graph}  one GraphSnapshot per graph per period
//	gate.relay.denials.{app}.{graph}   a JSON array of denials new since the last period
package status
