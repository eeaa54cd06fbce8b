package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// Refusal is an answer that refuses a request: its HTTP status, its body
// (wire.Error: the sentence naming the number, the consequence and the
// fix, the stable code, and the details that help a client) and its
// headers. Build one with Refuse and the detail setters; a Handler returns
// it and the Router writes it. Each setter sets one field of the body and
// returns the refusal, so they chain.
type Refusal struct {
	status int
	body   wire.Error
	header http.Header
	// brokerTimedOut is set when the refusal was built from a broker call
	// that outlived its deadline (a *queen.TimeoutError among the
	// arguments): the Router answers it as the broker's 504, whichever
	// deadline (the client's per-call one or the request's) fired first.
	brokerTimedOut bool
	// notBroker is set on a refusal about another system (the PostgreSQL
	// history): the broker deadline never relabels it as the broker's.
	notBroker bool
}

// Refuse builds a refusal of status with code (one of wire.Codes); format
// and args make the sentence as fmt.Sprintf does. An error among args that
// is a broker call's timeout marks the refusal as the broker's (see
// Router).
func Refuse(status int, code wire.Code, format string, args ...any) *Refusal {
	e := &Refusal{status: status, body: wire.Error{Error: fmt.Sprintf(format, args...), Code: code}}
	for _, a := range args {
		if err, ok := a.(error); ok && queen.IsTimeout(err) {
			e.brokerTimedOut = true
		}
	}
	return e
}

// Error is the refusal as an error: its status and sentence.
func (e *Refusal) Error() string { return fmt.Sprintf("HTTP %d: %v", e.status, e.body.Error) }

// Status is the refusal's HTTP status.
func (e *Refusal) Status() int { return e.status }

// Code is the refusal's code.
func (e *Refusal) Code() wire.Code { return e.body.Code }

// Message is the refusal's sentence.
func (e *Refusal) Message() string { return e.body.Error }

// Body is the JSON body the refusal is written with.
func (e *Refusal) Body() wire.Error { return e.body }

// Header is the headers the refusal is written with (nil when none).
func (e *Refusal) Header() http.Header { return e.header }

// Prefix puts s before the refusal's sentence (a caller saying what it was
// doing when the refusal arose); every other field is kept.
func (e *Refusal) Prefix(s string) *Refusal { e.body.Error = s + e.body.Error; return e }

// Field names the request field, URL segment, query parameter or header
// at fault.
func (e *Refusal) Field(name string) *Refusal { e.body.Field = name; return e }

// Rule names the declare rule (or the agent's rule) that refused.
func (e *Refusal) Rule(rule string) *Refusal { e.body.Rule = rule; return e }

// Rules lists every declare rule that refused, with the problems each
// found.
func (e *Refusal) Rules(rules []string, problems []wire.Problem) *Refusal {
	e.body.Rules, e.body.Problems = rules, problems
	return e
}

// Applications are the applications a flat graph name is ambiguous
// between.
func (e *Refusal) Applications(apps []string) *Refusal { e.body.Applications = apps; return e }

// Paths are the paths to choose from.
func (e *Refusal) Paths(paths []string) *Refusal { e.body.Paths = paths; return e }

// Nodes are the nodes to choose from.
func (e *Refusal) Nodes(nodes []string) *Refusal { e.body.Nodes = nodes; return e }

// Node names the node that refused.
func (e *Refusal) Node(node string) *Refusal { e.body.Node = node; return e }

// Budget names the budget at fault.
func (e *Refusal) Budget(id string) *Refusal { e.body.Budget = id; return e }

// Queue names the queue that replaces the refused route.
func (e *Refusal) Queue(queue string) *Refusal { e.body.Queue = queue; return e }

// Limit is the bound the request passed (the route's body limit, the push
// door's bytes in flight).
func (e *Refusal) Limit(n int64) *Refusal { e.body.Limit = &n; return e }

// MaxAttempts is the graph's attempt limit.
func (e *Refusal) MaxAttempts(n int64) *Refusal { e.body.MaxAttempts = &n; return e }

// RetryAfterSeconds repeats the wait in the body (RetryAfter sets the
// header).
func (e *Refusal) RetryAfterSeconds(n int64) *Refusal { e.body.RetryAfterSeconds = &n; return e }

// Room is the kv-key room a scope value had left.
func (e *Refusal) Room(n int64) *Refusal { e.body.Room = &n; return e }

// Bytes is the bytes the scope value took.
func (e *Refusal) Bytes(n int64) *Refusal { e.body.Bytes = &n; return e }

// Broker names the broker that did not answer and the deadline it missed.
func (e *Refusal) Broker(url string, timeoutMs int64) *Refusal {
	e.body.Broker, e.body.TimeoutMs = url, &timeoutMs
	return e
}

// Second is the recorded second (Unix ms) a simulation could not replay.
func (e *Refusal) Second(ms int64) *Refusal { e.body.Second = &ms; return e }

// StoredVersion is the version the graph's stored document still has,
// and the relay replicas running it (after a refused or failed declare).
func (e *Refusal) StoredVersion(v int64, running []string) *Refusal {
	e.body.StoredVersion, e.body.RunningReplicas = &v, running
	if running == nil {
		e.body.RunningReplicas = []string{}
	}
	return e
}

// Current is the stored document a 412 found: its entity tag ("" when
// nothing is stored) and, when history knows, who stored it and when.
func (e *Refusal) Current(etag, by string, at *int64) *Refusal {
	e.body.ETag, e.body.ChangedBy, e.body.ChangedAt = etag, by, at
	return e
}

// InflightBytes is the bytes of pushes already buffered.
func (e *Refusal) InflightBytes(n int64) *Refusal { e.body.InflightBytes = &n; return e }

// Unhealthy describes an unhealthy plane: status "unhealthy" and the
// broker's state.
func (e *Refusal) Unhealthy(queen wire.QueenState) *Refusal {
	e.body.Status, e.body.Queen = "unhealthy", &queen
	return e
}

// NotBroker marks a refusal about another system than the broker (the
// PostgreSQL history): a request whose broker deadline passed meanwhile is
// still answered with it, never as the broker's 504.
func (e *Refusal) NotBroker() *Refusal { e.notBroker = true; return e }

// RetryAfter sets the Retry-After header (whole seconds).
func (e *Refusal) RetryAfter(seconds int64) *Refusal {
	if e.header == nil {
		e.header = http.Header{}
	}
	e.header.Set("Retry-After", strconv.FormatInt(seconds, 10))
	return e
}

// WriteRefusal writes e: its headers, its status and its JSON body.
func WriteRefusal(w http.ResponseWriter, e *Refusal) {
	for k, v := range e.header {
		w.Header()[k] = v
	}
	WriteJSON(w, e.status, e.body)
}

// WriteJSON writes v as the JSON answer with status (HTML characters are
// not escaped). A value that cannot be encoded is answered 500 with a
// refusal saying so.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"encoding the answer failed","code":"` + string(wire.CodeInternalError) + `"}` + "\n")
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

var jsonContentType = []string{"application/json"}
