// Package provision makes the broker ready for a compiled plan: Gate-owned
// queues configured with Gate's retention policy, egress queues created if
// absent, application-owned queues never touched.
//
// gate-api provisions before it stores a declared document; gate-relay
// provisions again before it starts a graph, so a document restored from kv
// onto a fresh broker gets the same queues. Consumer groups are not made
// here: a relay's first pop creates them.
package provision
