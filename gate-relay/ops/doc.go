// Package ops serves gate-relay's operations endpoints: /health and the
// Prometheus /metrics, where every stage counter is labelled by app, graph,
// path and node.
package ops
