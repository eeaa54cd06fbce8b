package declare

import (
	"strings"

	"github.com/queen-mq/gate/libs/finding"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// QueueFacts is what the broker reports about an application-owned ingress
// queue. The zero value means the queue does not exist (or the probe
// failed): no partitions, no retention.
type QueueFacts struct {
	// Exists is true when the broker knows the queue.
	Exists bool
	// Partitions is the number of partitions the broker reported (0 when
	// unknown).
	Partitions int
	// RetentionSeconds is the queue's retention when > 0; 0 means none.
	RetentionSeconds int64
}

// Facts answers the broker-dependent questions of a declaration. The API
// implements it over its broker client (probing on demand, with its request
// context captured); a nil Facts compiles offline and the broker-dependent
// rules are listed in Result.Unchecked instead of being evaluated.
type Facts interface {
	// Queue probes an application-owned ingress queue. Any probe error must
	// be reported as the zero QueueFacts (the queue counts as missing).
	Queue(name string) QueueFacts
}

// Stored is another graph document the declaration is checked against: a
// graph of the same application (or any application, for queue ownership)
// kept in the store or running on this replica, or the previous version of
// the graph being declared.
type Stored struct {
	// App and Name identify the graph (they win over the document's own
	// application and graph fields).
	App, Name string
	// Doc is the parsed document; when nil, Body is parsed (v1 bodies are
	// mapped).
	Doc *graph.Document
	// Body is the stored JSON, used when Doc is nil.
	Body []byte
	// Running is true when this replica runs the graph (registry facts:
	// ingress-owner answers 422 for a running graph, 409 for one only in
	// the store; egress-owner and queue-cross-graph warn for both).
	Running bool
	// NotStored is true for a graph that runs on this replica but is absent
	// from the store (its store write failed).
	NotStored bool
}

// Input is one declaration to compile.
type Input struct {
	// App and Name are the route's application and graph; they overwrite the
	// document's fields. "" keeps the document's value (application
	// defaulting to "default"), which is what `gate-api check` does.
	App, Name string
	// Body is the JSON document, v2 or v1.
	Body []byte
	// Target is true on the /targets/{name} routes: a v1 body must be a v1
	// target (not a v1 graph). A v2 body is the same document either way.
	Target bool
	// Facts answers broker questions; nil compiles offline.
	Facts Facts
	// Stored are the other graphs (and this graph's previous version) the
	// cross-graph rules check against; nil means unknown (offline) and those
	// rules are listed in Result.Unchecked. An empty non-nil slice means
	// there are none. A caller's PUT passes the registry and the store; a
	// reconcile or restore, which must not be refused for a version or a
	// store-wide conflict, passes nil and ignores Unchecked.
	Stored []Stored
	// Related, when Stored is nil, is asked once, with the declared
	// document's Links, for the other graphs (and this graph's previous
	// version) the cross-graph rules check against: every graph that
	// shares a link with it is enough, since no rule relates graphs
	// without one. It answers as Stored would be given (nil: unknown). A
	// caller with many graphs indexes them by Links instead of passing
	// them all.
	Related func(links []string) []Stored
	// Options are the server knobs of the returned plan; the zero value is
	// the default compile.
	Options plan.Options
	// History says whether the declaring server has PostgreSQL history
	// (Watch needs it); nil means unknown (offline) and watch-history is
	// listed in Result.Unchecked for a Watch document.
	History *bool
}

// Result is the outcome of Compile.
type Result struct {
	// Doc is the parsed (for v1: mapped) document with the route's identity.
	Doc *graph.Document
	// Plan is the compiled plan; nil when Findings has errors.
	Plan *plan.Plan
	// Findings are every rule that fired, errors and warnings, in the
	// catalogue's reporting order.
	Findings finding.List
	// Migration are the v1 mapping's warnings (V1 only).
	Migration finding.List
	// V1 is true when Body was a v1 document that was mapped to v2.
	V1 bool
	// Conflict is true when the refusal comes from another graph or the
	// running version (version-bump, or ingress-owner found only in the
	// store): the API answers 409 instead of 422.
	Conflict bool
	// Unchecked lists the broker- or registry-dependent rules that could not
	// be evaluated because Facts or Stored were not given, in catalogue order.
	Unchecked []string
}

// Accepted reports whether the declaration passed every error rule.
func (r *Result) Accepted() bool { return !r.Findings.HasErrors() }

// Status is the HTTP status a PUT answers with this result: 200, 422 for a
// refused document, 409 for a conflict with another graph or the running
// version.
func (r *Result) Status() int {
	switch {
	case !r.Findings.HasErrors():
		return 200
	case r.Conflict:
		return 409
	}
	return 422
}

// Warnings returns the warning findings rendered "[rule] detail".
func (r *Result) Warnings() []string { return render(r.Findings.Warnings()) }

// Errors returns the error findings rendered "[rule] detail".
func (r *Result) Errors() []string { return render(r.Findings.Errors()) }

// ErrorText is the refusal as the API's `{"error": ...}` carries it: the
// rendered errors joined by "; ". It is "" for an accepted result.
func (r *Result) ErrorText() string { return strings.Join(r.Errors(), "; ") }

// Response is the 200 body of the PUT; nil when the result was refused.
func (r *Result) Response() *plan.Response {
	if r.Plan == nil {
		return nil
	}
	var migration []string
	if r.V1 {
		migration = render(r.Migration)
	}
	resp := plan.NewResponse(r.Plan, r.Warnings(), migration, r.V1)
	return &resp
}

func render(l finding.List) []string {
	out := make([]string, 0, len(l))
	for _, f := range l {
		out = append(out, "["+f.Rule+"] "+f.Message)
	}
	return out
}
