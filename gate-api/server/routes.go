package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/queen-mq/gate/libs/plan"
)

// req is one request as a handler sees it.
type req struct {
	w http.ResponseWriter
	r *http.Request
	// flat is true on the routes without /apps/{app}.
	flat bool
	// limit is the route's body limit in bytes.
	limit int64
	vars  map[string]string
	// outer is the request's context without the broker deadline wrap
	// puts on r (a PUT's wait for a relay is not broker work).
	outer context.Context
}

// handler answers a request: it writes a success itself and returns nil,
// or returns the refusal to write.
type handler func(q *req) *apiError

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
	// request that took long is answered, never cut at the server's
	// write timeout (a writer without deadlines, as in tests, ignores it).
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(answerWriteWindow))
	w.ResponseWriter.WriteHeader(code)
}

// answerWriteWindow is how long writing one answer may take once it is
// ready.
const answerWriteWindow = 30 * time.Second

func (s *Server) routes() http.Handler {
	r := mux.NewRouter().UseEncodedPath().SkipClean(true)
	small, push := s.cfg.BodyBytes, s.cfg.MaxPushBodyBytes
	// both registers the application route and its flat twin.
	both := func(name, method, suffix string, limit int64, h handler) {
		r.Handle("/v1/apps/{app}"+suffix, s.wrap(name, false, limit, h)).Methods(method)
		r.Handle("/v1"+suffix, s.wrap("flat-"+name, true, limit, h)).Methods(method)
	}
	// The push routes come first: the router tries routes in order, and
	// nearly every request is a push.
	both("push", http.MethodPost, "/graphs/{graph}/nodes/{node}/push", push, s.push)
	both("target-push", http.MethodPost, "/targets/{graph}/lanes/{lane}/push", push, s.push)
	both("graph-put", http.MethodPut, "/graphs/{name}", small, func(q *req) *apiError { return s.putGraph(q, false) })
	both("graph-get", http.MethodGet, "/graphs/{name}", small, s.getGraph)
	both("graph-delete", http.MethodDelete, "/graphs/{name}", small, func(q *req) *apiError { return s.deleteGraph(q, false) })
	both("target-put", http.MethodPut, "/targets/{name}", small, func(q *req) *apiError { return s.putGraph(q, true) })
	both("target-get", http.MethodGet, "/targets/{name}", small, s.getGraph)
	both("target-delete", http.MethodDelete, "/targets/{name}", small, func(q *req) *apiError { return s.deleteGraph(q, true) })
	both("targets-sync", http.MethodPut, "/targets", small, s.syncTargets)

	both("backoff", http.MethodPost, "/graphs/{graph}/nodes/{node}/backoff", small, s.backoff)
	both("backoff-lift", http.MethodDelete, "/graphs/{graph}/nodes/{node}/backoff", small, s.liftBackoff)
	both("reenter", http.MethodPost, "/graphs/{graph}/reenter", small, s.reenter)
	both("eta", http.MethodGet, "/graphs/{graph}/nodes/{node}/eta", small, s.eta)
	both("target-eta", http.MethodGet, "/targets/{graph}/eta", small, s.eta)

	r.Handle("/v1/apps/{app}/metrics", s.wrap("app-metrics", false, small, s.productMetrics)).Methods(http.MethodGet)

	both("gone-next", http.MethodGet, "/graphs/{graph}/nodes/{node}/next", small, s.goneNext)
	both("gone-target-next", http.MethodGet, "/targets/{graph}/lanes/{lane}/next", small, s.goneNext)
	r.Handle("/v1/leases/{op:ack|nack|renew}", s.wrap("gone-leases", true, small, s.goneLease)).Methods(http.MethodPost)

	s.historyRoutes(r, small)
	s.insightRoutes(r)

	r.Handle("/health", s.wrap("health", true, small, s.healthz)).Methods(http.MethodGet)
	r.Handle("/version", s.wrap("version", true, small, s.version)).Methods(http.MethodGet)
	r.Handle("/api/version", s.wrap("version", true, small, s.version)).Methods(http.MethodGet)
	s.consoleRoutes(r, small)
	s.aiRoutes(r, small)
	r.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})).Methods(http.MethodGet)

	r.NotFoundHandler = s.wrap("unknown", true, small, func(q *req) *apiError {
		return fail(http.StatusNotFound, "no route %s %s: see the README for the routes of gate-api", q.r.Method, q.r.URL.EscapedPath())
	})
	r.MethodNotAllowedHandler = s.wrap("unknown", true, small, func(q *req) *apiError {
		return fail(http.StatusMethodNotAllowed, "%s is not allowed on %s: see the README for the methods of this route", q.r.Method, q.r.URL.EscapedPath())
	})
	return r
}

// wrap turns a handler into an http.Handler that decodes the route
// variables, writes refusals, counts the answer and logs server errors.
func (s *Server) wrap(name string, flat bool, limit int64, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		outer := r.Context()
		if d := s.cfg.BrokerTimeout; d > 0 {
			// The broker work of one request shares one deadline, so a
			// hung broker is answered within it however many calls the
			// route makes. Reading the body is not broker work: the
			// deadline starts again when the body has been read.
			ctx, cancel := context.WithCancelCause(outer)
			timer := time.AfterFunc(d, func() { cancel(errBrokerDeadline) })
			defer func() { timer.Stop(); cancel(nil) }()
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = &restartOnEOF{ReadCloser: r.Body, restart: func() { timer.Reset(d) }}
			}
			r = r.WithContext(ctx)
		}
		q := &req{w: sw, r: r, flat: flat, limit: limit, outer: outer}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panicked", "route", name, "method", r.Method, "path", r.URL.EscapedPath(), "panic", p, "stack", string(debug.Stack()))
				writeError(sw, fail(http.StatusInternalServerError, "gate-api failed on this request (a bug, logged with its stack): retry, and report it if it repeats"))
				s.metrics.requests.WithLabelValues(name, r.Method, "500").Inc()
			}
		}()
		e := q.decodeVars()
		if e == nil {
			e = h(q)
		}
		if e != nil && e.status >= 500 && (context.Cause(r.Context()) == errBrokerDeadline || e.brokerTimedOut) && outer.Err() == nil {
			e = s.brokerTimeout(e)
		}
		if e != nil {
			writeError(sw, e)
		}
		s.metrics.requests.WithLabelValues(name, r.Method, strconv.Itoa(sw.status)).Inc()
		if sw.status >= 500 && sw.status != http.StatusServiceUnavailable {
			msg := ""
			if e != nil {
				msg = e.body.Error
			}
			s.log.Warn("request failed", "route", name, "method", r.Method, "path", r.URL.EscapedPath(), "status", sw.status, "error", msg)
		}
	})
}

// errBrokerDeadline is the cause of a request context ended by
// GATE_BROKER_TIMEOUT_MS.
var errBrokerDeadline = errors.New("GATE_BROKER_TIMEOUT_MS passed")

// restartOnEOF runs restart once, when the body has been read to its end.
type restartOnEOF struct {
	io.ReadCloser
	restart func()
	done    bool
}

func (b *restartOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		b.restart()
	}
	return n, err
}

// brokerTimeout is the answer to a request whose broker work outlived
// GATE_BROKER_TIMEOUT_MS: 504 naming the broker, the deadline and what the
// handler knew (its own refusal text), with Retry-After.
func (s *Server) brokerTimeout(e *apiError) *apiError {
	out := fail(http.StatusGatewayTimeout, "the broker (QUEEN_URL %s) did not answer within GATE_BROKER_TIMEOUT_MS (%d ms): %s", s.cfg.QueenURL, s.cfg.BrokerTimeout.Milliseconds(), e.body.Error)
	// Keep what the handler said about its own refusal (its rule, node,
	// …); the deadline's words and Retry-After are this answer's.
	body := e.body
	body.Error = out.body.Error
	out.body = body
	return out.with("broker", s.cfg.QueenURL).with("timeoutMs", s.cfg.BrokerTimeout.Milliseconds()).retryAfter(1)
}

// decodeVars percent-decodes the route variables (routing happens on the
// encoded path, so "a%2Fb" reaches the handler as the name "a/b" and is
// refused by name instead of by a missing route).
func (q *req) decodeVars() *apiError {
	raw := mux.Vars(q.r)
	q.vars = make(map[string]string, len(raw))
	for k, v := range raw {
		d, err := url.PathUnescape(v)
		if err != nil {
			return fail(http.StatusBadRequest, "the %s segment %q of the URL is not valid percent-encoding: %v", k, v, err).field(k)
		}
		q.vars[k] = d
	}
	return nil
}

// app is the route's application: {app}, or "default" on a flat route
// (callers that resolve flat names across applications do so themselves).
func (q *req) app() string {
	if q.flat {
		return plan.DefaultApplication
	}
	return q.vars["app"]
}
