package miniqueen

import (
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
)

// calls counts the requests the broker served, by route pattern; a pop is
// counted apart by whether it asked to wait (a long-poll) or not, since an
// idle fleet's cost is mostly the two kinds of empty pop.
type calls struct {
	mu sync.Mutex
	m  map[string]*atomic.Uint64
}

// counter answers the counter for key, made on first use. Handler takes
// its counters once, when it builds the routes, so a request only adds.
func (c *calls) counter(key string) *atomic.Uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*atomic.Uint64{}
	}
	n, ok := c.m[key]
	if !ok {
		n = new(atomic.Uint64)
		c.m[key] = n
	}
	return n
}

// count wraps fn to count its requests under pattern; pops are counted
// under pattern plus " wait=true" or " wait=false".
func (c *calls) count(pattern, route string, fn http.Handler) http.Handler {
	if route != RoutePop {
		n := c.counter(pattern)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			fn.ServeHTTP(w, r)
		})
	}
	waiting, quick := c.counter(pattern+" wait=true"), c.counter(pattern+" wait=false")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isTrue(rawQuery(r.URL.RawQuery).Get("wait")) {
			waiting.Add(1)
		} else {
			quick.Add(1)
		}
		fn.ServeHTTP(w, r)
	})
}

// CallCount is the number of requests served on one route pattern.
type CallCount struct {
	// Pattern is the route as the broker's mux names it ("GET
	// /api/v1/pop/queue/{queue}"); a pop's carries " wait=true" or
	// " wait=false" after it.
	Pattern string
	// N is the requests served on it since New, faults and hangs
	// included.
	N uint64
}

// Calls answers the requests served since New per route pattern, in
// pattern order, leaving out patterns never called. Measuring a fleet's
// call mix reads it (or /metrics/prometheus's miniqueen_requests_total)
// twice and takes the difference.
func (s *Server) Calls() []CallCount {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	out := make([]CallCount, 0, len(s.calls.m))
	for k, n := range s.calls.m {
		if v := n.Load(); v > 0 {
			out = append(out, CallCount{Pattern: k, N: v})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Pattern < out[b].Pattern })
	return out
}
