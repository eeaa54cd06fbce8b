package httpapi

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/wire"
)

// Config is how a Router wraps its routes. The zero value is usable: no
// broker deadline, no request counts, routing on the encoded path.
type Config struct {
	// Name names the server in its refusals ("gate-api failed on this
	// request"); "" means "gate".
	Name string
	// Log receives the ERROR line of a handler's panic and the WARN line
	// of every server error but 503; nil means slog.Default().
	Log *slog.Logger
	// Clock times the broker deadline; nil means the wall clock.
	Clock clock.Clock
	// Requests counts every answer by route name, method and status; nil
	// counts nothing.
	Requests *prometheus.CounterVec
	// Broker is the broker's URL, named in the 504 of a request whose
	// broker work outlived BrokerTimeout.
	Broker string
	// BrokerTimeout bounds the broker work of one request: the request's
	// context ends this long after the request arrived, and again this
	// long after its body was read; 0 means no deadline.
	BrokerTimeout time.Duration
	// Clean redirects a path that is not clean, or a subtree's root asked
	// without its slash, the way net/http's ServeMux does (307, the query
	// kept); false routes every path as sent, so ".." reaches a handler's
	// name check instead of another route. Either way routes match the
	// encoded path: "a%2Fb" is one segment.
	Clean bool
}

// WithDefaults fills the zero fields that have a default.
func (c Config) WithDefaults() Config {
	c.Name = cmp.Or(c.Name, "gate")
	c.Log = cmp.Or(c.Log, slog.Default())
	c.Clock = clock.Or(c.Clock)
	return c
}

// Route is one route of a Router: its name (the route label of the request
// counts), its method and gorilla path template, its body limit, and
// whether it is flat (a gate-api route without /apps/{app}).
type Route struct {
	Name   string
	Method string
	Path   string
	// Limit is the most body bytes the route reads (0: none).
	Limit int64
	Flat  bool
	// Read marks a route that changes nothing although its method is not
	// GET (a POST whose body is the question, as a simulation's candidate
	// document): a plane behind sign-in lets viewers call it (IsRead).
	Read bool
}

// RouteInfo is one registered route as Routes lists it.
type RouteInfo struct {
	Method string
	Path   string
	// Read is Route.Read: a non-GET route that changes nothing.
	Read bool
}

// Router is the router every Gate server uses: routes are tried in the
// order they were registered, the first that matches answers.
type Router struct {
	cfg Config
	mux *mux.Router
	// prefixes and exact are the paths registered with HandlePrefix and
	// with an exact path, for the clean mode's redirects.
	prefixes map[string]bool
	exact    map[string]bool
	// reads are the routes registered with Route.Read.
	reads map[*mux.Route]bool
	// matched remembers which route answered a method and encoded path
	// (matchCache).
	matched matchCache
}

// NewRouter returns an empty router for cfg.
func NewRouter(cfg Config) *Router {
	cfg = cfg.WithDefaults()
	m := mux.NewRouter().UseEncodedPath().SkipClean(true)
	return &Router{cfg: cfg, mux: m, prefixes: map[string]bool{}, exact: map[string]bool{}, reads: map[*mux.Route]bool{}}
}

// Handle registers h for rt.
func (r *Router) Handle(rt Route, h Handler) {
	r.matched.reset()
	r.exact[rt.Path] = true
	route := r.mux.Handle(rt.Path, r.wrap(rt, h)).Methods(rt.Method)
	if rt.Read {
		r.reads[route] = true
	}
}

// IsRead reports whether req is a read: a GET or HEAD, or a request to a
// route registered with Route.Read. A request no route takes is not one.
func (r *Router) IsRead(req *http.Request) bool {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return true
	}
	var m mux.RouteMatch
	return r.mux.Match(req, &m) && m.MatchErr == nil && r.reads[m.Route]
}

// HandleHTTP registers a plain handler for path and methods (none: every
// method). The handler writes its answers itself (WriteRefusal for its
// refusals); the Router adds nothing to it.
func (r *Router) HandleHTTP(path string, h http.Handler, methods ...string) {
	r.matched.reset()
	r.exact[path] = true
	rt := r.mux.Handle(path, h)
	if len(methods) > 0 {
		rt.Methods(methods...)
	}
}

// HandlePrefix registers a plain handler for every path under prefix
// (which ends with "/"), whatever the method.
func (r *Router) HandlePrefix(prefix string, h http.Handler) {
	r.matched.reset()
	r.prefixes[prefix] = true
	r.mux.PathPrefix(prefix).Handler(h)
}

// NotFound answers the requests no route matches with h, wrapped as rt.
func (r *Router) NotFound(rt Route, h Handler) { r.mux.NotFoundHandler = r.wrap(rt, h) }

// MethodNotAllowed answers the requests whose path a route matches but not
// their method with h, wrapped as rt.
func (r *Router) MethodNotAllowed(rt Route, h Handler) {
	r.mux.MethodNotAllowedHandler = r.wrap(rt, h)
}

// Routes lists every route registered with a method, sorted by path then
// method, so a plane that mounts a router can prove each one is guarded.
func (r *Router) Routes() []RouteInfo {
	var out []RouteInfo
	_ = r.mux.Walk(func(rt *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := rt.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, err := rt.GetMethods()
		if err != nil {
			return nil
		}
		for _, m := range methods {
			out = append(out, RouteInfo{Method: m, Path: path, Read: r.reads[rt]})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// ServeHTTP routes one request.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.cfg.Clean && req.Method != http.MethodConnect {
		if to, ok := r.redirect(req); ok {
			http.Redirect(w, req, to, http.StatusTemporaryRedirect)
			return
		}
	}
	if m, ok := r.matched.get(req); ok {
		m.handler.ServeHTTP(w, mux.SetURLVars(req, m.vars))
		return
	}
	var m mux.RouteMatch
	if r.mux.Match(req, &m) && m.MatchErr == nil && m.Route != nil && m.Handler != nil {
		r.matched.put(req, matchedRoute{handler: m.Handler, vars: m.Vars})
		m.Handler.ServeHTTP(w, mux.SetURLVars(req, m.Vars))
		return
	}
	r.mux.ServeHTTP(w, req)
}

// redirect is where the clean mode sends a request, as net/http's ServeMux
// would: a subtree's root asked without its slash goes to the root, an
// encoded path that is not clean to its clean form, the query kept.
func (r *Router) redirect(req *http.Request) (string, bool) {
	escaped := req.URL.EscapedPath()
	p := cleanPath(escaped)
	if !strings.HasSuffix(p, "/") && r.prefixes[p+"/"] && !r.exact[p] {
		return (&url.URL{Path: cleanPath(req.URL.Path) + "/", RawQuery: req.URL.RawQuery}).String(), true
	}
	if p != escaped {
		return (&url.URL{Path: p, RawQuery: req.URL.RawQuery}).String(), true
	}
	return "", false
}

// cleanPath is path.Clean that keeps a trailing slash, as net/http's.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// wrap turns h into an http.Handler for rt: it decodes the route
// variables, gives the broker work its deadline, recovers a panic as a
// 500, writes the refusal h returns (a 5xx from a broker that outlived its
// deadline as the broker's 504) after draining what the handler left of
// the body (DrainBody), counts the answer and logs server errors.
func (r *Router) wrap(rt Route, h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		outer := req.Context()
		var body *trackedBody
		if req.Body != nil && req.Body != http.NoBody {
			body = &trackedBody{ReadCloser: req.Body}
			req.Body = body
		}
		if d := r.cfg.BrokerTimeout; d > 0 {
			// The broker work of one request shares one deadline, so a
			// hung broker is answered within it however many calls the
			// route makes. Reading the body is not broker work: the
			// deadline starts again when the body has been read.
			ctx, cancel := context.WithCancelCause(outer)
			timer := r.cfg.Clock.AfterFunc(d, func() { cancel(errBrokerDeadline) })
			defer func() { timer.Stop(); cancel(nil) }()
			if body != nil {
				body.restart = func() { timer.Reset(d) }
			}
			req = req.WithContext(ctx)
		}
		q := &Request{W: sw, R: req, Flat: rt.Flat, Limit: rt.Limit, Outer: outer}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				r.cfg.Log.Error("handler panicked", "route", rt.Name, "method", req.Method, "path", req.URL.EscapedPath(), "panic", p, "stack", string(debug.Stack()))
				WriteRefusal(sw, Refuse(http.StatusInternalServerError, wire.CodeInternalError, "%s failed on this request (a bug, logged with its stack): retry, and report it if it repeats", r.cfg.Name))
				r.count(rt.Name, req.Method, http.StatusInternalServerError)
			}
		}()
		e := q.decodeVars()
		if e == nil {
			e = h(q)
		}
		if e != nil && e.status >= 500 && !e.notBroker && (context.Cause(req.Context()) == errBrokerDeadline || e.brokerTimedOut) && outer.Err() == nil {
			e = r.brokerTimeout(e)
		}
		if e != nil {
			// The refusal must reach a client still writing its body.
			drainRefused(sw, req, body)
			WriteRefusal(sw, e)
		}
		r.count(rt.Name, req.Method, sw.status)
		if sw.status >= 500 && sw.status != http.StatusServiceUnavailable {
			msg := ""
			if e != nil {
				msg = e.body.Error
			}
			r.cfg.Log.Warn("request failed", "route", rt.Name, "method", req.Method, "path", req.URL.EscapedPath(), "status", sw.status, "error", msg)
		}
	})
}

func (r *Router) count(route, method string, status int) {
	if r.cfg.Requests != nil {
		r.cfg.Requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	}
}

// errBrokerDeadline is the cause of a request context ended by the broker
// deadline.
var errBrokerDeadline = errors.New("GATE_BROKER_TIMEOUT_MS passed")

// brokerTimeout is the answer to a request whose broker work outlived the
// deadline: 504 naming the broker, the deadline and what the handler knew
// (its own refusal's sentence), with Retry-After.
func (r *Router) brokerTimeout(e *Refusal) *Refusal {
	out := Refuse(http.StatusGatewayTimeout, wire.CodeBrokerTimeout, "the broker (QUEEN_URL %s) did not answer within GATE_BROKER_TIMEOUT_MS (%d ms): %s", r.cfg.Broker, r.cfg.BrokerTimeout.Milliseconds(), e.body.Error)
	// Keep what the handler said about its own refusal (its rule, node,
	// …); the deadline's words, code and Retry-After are this answer's.
	body := e.body
	body.Error, body.Code = out.body.Error, out.body.Code
	out.body = body
	return out.Broker(r.cfg.Broker, r.cfg.BrokerTimeout.Milliseconds()).RetryAfter(1)
}
