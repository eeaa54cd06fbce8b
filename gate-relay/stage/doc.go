// Package stage is one relay consumer: for one (path, hop) of a compiled
// graph it long-polls the source queue, charges each claim's cost against
// the node's budgets in one kv call, and settles the admitted prefix in one
// transaction that acks the source and pushes to the next hop's
// same-named partition. Waiting for a window parks the handler holding its
// claim; it never fails the message.
package stage
