package shadow

import (
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/plan"
)

// Compile merges c into the stored document doc and compiles the result
// with libs/declare, exactly as a PUT of that document would be compiled
// offline (no broker facts, no cross-graph store): a refused candidate's
// findings name the document field (/nodes/NODE/budgets/i/…).
func Compile(app, graph string, doc []byte, c Candidate, opts plan.Options) (*declare.Result, error) {
	merged, err := Merge(doc, c)
	if err != nil {
		return nil, err
	}
	return declare.Compile(declare.Input{App: app, Name: graph, Body: merged, Options: opts})
}
