package miniqueen

import (
	"net/http"
	"sync"
)

// hangs are the routes SetHang holds, each with the channel ClearHang
// closes to release them.
type hangs struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (h *hangs) get(route string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[route]
}

// SetHang makes every request to route (one of the Route* names) wait
// without an answer — a broker that accepted the connection and hangs —
// until ClearHang(route), the client gives up, or the server stops. A
// request released by ClearHang is then served normally.
func (s *Server) SetHang(route string) {
	h := &s.hung
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]chan struct{}{}
	}
	if _, ok := h.m[route]; !ok {
		h.m[route] = make(chan struct{})
	}
}

// ClearHang releases the requests SetHang holds on route and stops holding
// new ones.
func (s *Server) ClearHang(route string) {
	h := &s.hung
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.m[route]; ok {
		close(ch)
		delete(h.m, route)
	}
}

// hold blocks a request on a hung route; it reports false when the request
// must not be served (the client left or the server stopped).
func (s *Server) hold(route string, r *http.Request) bool {
	ch := s.hung.get(route)
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-r.Context().Done():
		return false
	case <-s.stopping():
		return false
	}
}
