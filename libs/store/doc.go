// Package store keeps Gate's durable shared state in Queen kv: the declared
// graph documents, the change signal that wakes relays, and the status each
// relay replica publishes for the other binaries to read.
//
// Binaries coordinate only through this package (and optional PostgreSQL):
// gate-api writes documents, gate-relay replicas read them and write their
// status, gate-api reads the status back to render a graph view.
package store
