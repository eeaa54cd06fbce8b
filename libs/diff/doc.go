// Package diff owns the diff of a graph declaration against the stored
// document: what storing it would change (nodes, budgets with their old and
// new numbers, paths and shares, the queues and consumer groups provisioned
// or left unused, counters whose sub-window changes, Watch ↔ enforcing),
// computed from the two compiled plans and documents as the typed
// wire.Diff the dry run, the PUT answer and the change history carry, and
// rendered as text for a person (gate-api diff and apply, a history
// revision's summary).
package diff
