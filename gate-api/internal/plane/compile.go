package plane

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Facts are the broker facts the compiler asks about application-owned
// ingress queues, read through the plane's client under ctx.
func (p *Plane) Facts(ctx context.Context) declare.Facts { return brokerFacts{ctx: ctx, c: p.Client} }

// brokerFacts probes application-owned ingress queues for the compiler.
type brokerFacts struct {
	ctx context.Context
	c   *queen.Client
}

func (f brokerFacts) Queue(name string) declare.QueueFacts {
	qi, err := f.c.Queue(f.ctx, name)
	if err != nil {
		return declare.QueueFacts{}
	}
	out := declare.QueueFacts{Exists: true, Partitions: len(qi.Partitions)}
	if qi.RetentionSeconds.Set && qi.RetentionSeconds.Value > 0 {
		out.RetentionSeconds = qi.RetentionSeconds.Value
	}
	return out
}

// StoredOf is docs as the compiler's cross-graph rules read them (never
// nil: a nil Stored tells the compiler the store is unknown).
func StoredOf(docs []store.Document) []declare.Stored {
	out := make([]declare.Stored, 0, len(docs))
	for _, d := range docs {
		out = append(out, declare.Stored{App: d.App, Name: d.Graph, Body: d.Body})
	}
	return out
}

// CompileRefusal is how a PUT refuses a document declare.Compile could not
// read (err: rule document, 422) or did not accept (every problem "[rule]
// detail" joined by "; ", the first rule, and the findings with their
// location, at the status the rules give); nil when res was accepted.
func CompileRefusal(res *declare.Result, err error) *httpapi.Refusal {
	if err != nil {
		msg := err.Error()
		if !errors.Is(err, declare.ErrUnreadable) {
			msg = "the document could not be read: " + msg
		}
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeDeclareRefused, "%s", msg).Rule("document")
	}
	if res.Accepted() {
		return nil
	}
	errs := res.Findings.Errors()
	rules := make([]string, 0, len(errs))
	problems := make([]wire.Problem, 0, len(errs))
	for _, f := range errs {
		rules = append(rules, f.Rule)
		problems = append(problems, wire.Problem{Rule: f.Rule, Message: f.Message, At: f.At})
	}
	e := httpapi.Refuse(res.Status(), wire.CodeDeclareRefused, "%s", strings.Join(res.Errors(), "; ")).Rules(rules, problems)
	if len(rules) > 0 {
		e.Rule(rules[0])
	}
	return e
}
