package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// apiError is a refusal with its HTTP status and JSON body (wire.Error).
// The body always carries "error" (a sentence naming the number, the
// consequence and the fix); "rule", "field" and the other fields of
// wire.Error are added where they help a client.
type apiError struct {
	status int
	body   wire.Error
	header http.Header
	// brokerTimedOut is set when the refusal was built from a broker call
	// that outlived its deadline (a *queen.TimeoutError among the
	// arguments): wrap answers it as the broker's 504, whichever deadline
	// — the client's per-call one or the request's — fired first.
	brokerTimedOut bool
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %v", e.status, e.body.Error) }

// fail builds a refusal; args format the message like fmt.Sprintf.
func fail(status int, format string, args ...any) *apiError {
	e := &apiError{status: status, body: wire.Error{Error: fmt.Sprintf(format, args...)}}
	for _, a := range args {
		if err, ok := a.(error); ok && queen.IsTimeout(err) {
			e.brokerTimedOut = true
		}
	}
	return e
}

// with sets one field of the body by its JSON name; a name wire.Error does
// not have is a bug and panics (the handler wrapper logs it).
func (e *apiError) with(key string, v any) *apiError {
	b := &e.body
	switch key {
	case "field":
		b.Field = v.(string)
	case "rule":
		b.Rule = v.(string)
	case "rules":
		b.Rules = v.([]string)
	case "problems":
		b.Problems = v.([]wire.Problem)
	case "applications":
		b.Applications = v.([]string)
	case "paths":
		b.Paths = v.([]string)
	case "nodes":
		b.Nodes = v.([]string)
	case "node":
		b.Node = v.(string)
	case "budget":
		b.Budget = v.(string)
	case "queue":
		b.Queue = v.(string)
	case "status":
		b.Status = v.(string)
	case "queen":
		q := v.(wire.QueenState)
		b.Queen = &q
	case "limit":
		b.Limit = ptr(toInt64(v))
	case "maxAttempts":
		b.MaxAttempts = ptr(toInt64(v))
	case "retryAfterSeconds":
		b.RetryAfterSeconds = ptr(toInt64(v))
	case "room":
		b.Room = ptr(toInt64(v))
	case "bytes":
		b.Bytes = ptr(toInt64(v))
	case "broker":
		b.Broker = v.(string)
	case "timeoutMs":
		b.TimeoutMs = ptr(toInt64(v))
	case "second":
		b.Second = ptr(toInt64(v))
	case "inflightBytes":
		b.InflightBytes = ptr(toInt64(v))
	default:
		panic("apiError.with: wire.Error has no field " + key)
	}
	return e
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case uint32:
		return int64(n)
	}
	panic(fmt.Sprintf("apiError.with: %T is not a whole number", v))
}

// field names the request field at fault.
func (e *apiError) field(name string) *apiError { return e.with("field", name) }

// retryAfter sets the Retry-After header (whole seconds).
func (e *apiError) retryAfter(seconds int64) *apiError {
	if e.header == nil {
		e.header = http.Header{}
	}
	e.header.Set("Retry-After", strconv.FormatInt(seconds, 10))
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"encoding the answer failed"}` + "\n")
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

var jsonContentType = []string{"application/json"}

func writeError(w http.ResponseWriter, e *apiError) {
	for k, v := range e.header {
		w.Header()[k] = v
	}
	writeJSON(w, e.status, e.body)
}
