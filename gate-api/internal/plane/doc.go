// Package plane is what gate-api's route families share and nothing
// else: the broker client and the store, the catalogue of declared graphs
// and the relays' published status, the injected clock, the history
// database, the short caches of the broker's health and queue depths, the
// Prometheus registry, and the lookups every family starts from (resolving
// the graph a route names, Gate's name rule). It depends on no family;
// every family (push, declare, live, insight, ai) depends on it.
package plane
