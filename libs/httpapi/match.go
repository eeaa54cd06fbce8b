package httpapi

import (
	"net/http"
	"sync"
)

// matchCacheSize bounds the method and path pairs a Router remembers;
// past it the cache starts again empty (paths carry caller-chosen names,
// so it must not grow with them).
const matchCacheSize = 4096

// matchedRoute is what answered one method and encoded path: the route's
// handler and its (encoded) variables, shared read-only by every request
// to that path.
type matchedRoute struct {
	handler http.Handler
	vars    map[string]string
}

// matchCache remembers the route that answered a method and encoded path,
// so the requests after the first skip the router's walk through every
// route's pattern (profiled at about a fifth of an observe answer's own
// CPU in gate-api: gorilla/mux tries each route's regular expression in
// registration order). Only a full match is remembered; a miss, a 404 or
// a 405 goes through the router every time. Registering a route empties
// it. Safe for concurrent use; the zero value is empty.
type matchCache struct {
	mu sync.RWMutex
	m  map[string]matchedRoute
}

func matchKey(req *http.Request) string { return req.Method + " " + req.URL.EscapedPath() }

func (c *matchCache) get(req *http.Request) (matchedRoute, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m, ok := c.m[matchKey(req)]
	return m, ok
}

func (c *matchCache) put(req *http.Request, m matchedRoute) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= matchCacheSize {
		c.m = make(map[string]matchedRoute, 64)
	}
	c.m[matchKey(req)] = m
}

func (c *matchCache) reset() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
