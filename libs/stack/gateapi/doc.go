// Package gateapi is a small client of gate-api's application routes — the
// declare, graph view, push front door and backoff routes — as the launcher,
// gate-e2e and gate-bench drive them. It decodes only the fields those tools
// read and keeps every response's raw JSON.
package gateapi
