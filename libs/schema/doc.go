// Package schema holds the JSON Schema (draft 2020-12) of the v2 graph
// document and validates a document against it, naming the JSON pointer of
// every violation, so editors, the drafting assistant and clients can check a
// declaration's shape before sending it.
package schema
