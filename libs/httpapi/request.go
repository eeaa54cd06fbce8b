package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-mq/gate/libs/wire"
)

// Handler answers a request: it writes a success itself and returns nil,
// or returns the refusal for the Router to write.
type Handler func(q *Request) *Refusal

// Request is one request as a Handler sees it.
type Request struct {
	// W writes the answer; the Router remembers the status written.
	W http.ResponseWriter
	// R is the request. Its context ends with the broker deadline
	// (Config.BrokerTimeout).
	R *http.Request
	// Flat is true on a route registered as flat.
	Flat bool
	// Limit is the route's body limit in bytes.
	Limit int64
	// Vars are the route's variables, percent-decoded.
	Vars map[string]string
	// Outer is the request's context without the broker deadline: a wait
	// that is not broker work (a declare waiting for a relay) runs under
	// it.
	Outer context.Context
}

// Context is the request's context, bounded by the broker deadline.
func (q *Request) Context() context.Context { return q.R.Context() }

// Query is the request's query parameters.
func (q *Request) Query() url.Values { return q.R.URL.Query() }

// ReadJSON reads the body as one JSON value within the route's limit: 415
// without a JSON Content-Type, 413 above the limit, 400 when it is empty
// or not JSON.
func (q *Request) ReadJSON() ([]byte, *Refusal) { return readBody(q.W, q.R, q.Limit) }

// ReadRaw is ReadJSON without the JSON check, for a body DecodeStrict
// parses anyway (it answers 400 for broken JSON itself).
func (q *Request) ReadRaw() ([]byte, *Refusal) { return readRaw(q.W, q.R, q.Limit) }

// decodeVars percent-decodes the route variables (a router on the encoded
// path hands them encoded, so "a%2Fb" reaches the handler as the name
// "a/b" and is refused by name instead of by a missing route).
func (q *Request) decodeVars() *Refusal {
	raw := mux.Vars(q.R)
	q.Vars = make(map[string]string, len(raw))
	for k, v := range raw {
		d, err := url.PathUnescape(v)
		if err != nil {
			return Refuse(http.StatusBadRequest, wire.CodeInvalidURLEncoding, "the %s segment %q of the URL is not valid percent-encoding: %v", k, v, err).Field(k)
		}
		q.Vars[k] = d
	}
	return nil
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// Unwrap lets http.ResponseController reach the connection (the AI chat
// extends its write deadline past the server's default).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	// The answer is ready: give it its own window to be written, so a
	// request that took long is answered, never cut at the server's write
	// timeout (a writer without deadlines, as in tests, ignores it). A
	// socket's deadline is the operating system's wall clock, never the
	// injected one.
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(answerWriteWindow))
	w.ResponseWriter.WriteHeader(code)
}

// answerWriteWindow is how long writing one answer may take once it is
// ready.
const answerWriteWindow = 30 * time.Second
