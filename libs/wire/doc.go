// Package wire holds the JSON shapes Gate's HTTP planes answer with: one
// set of Go types used by gate-api, gate-console, the Go client in
// libs/stack/gateapi and, generated from this package's source, the
// console web app's TypeScript. A route family keeps its shapes in one
// file here (view.go, watch.go, insight.go, …).
//
// Conventions: every field carries a json tag; a value that may be
// unknown is a pointer (rendered null, never a made-up zero); slices a
// client iterates are never nil on the wire (empty arrays, not null);
// times are Unix milliseconds in fields named At/…At unless the field
// says otherwise. No response is built from map[string]any.
package wire
