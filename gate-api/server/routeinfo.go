package server

import (
	"sort"

	"github.com/gorilla/mux"
)

// Route is one registered route: its method and path template (gorilla
// syntax, e.g. /v1/apps/{app}/graphs/{name}).
type Route struct {
	Method string
	Path   string
}

// Routes lists every route of the application plane, sorted, so a plane
// that mounts this handler (gate-console) can prove each one is guarded.
func (s *Server) Routes() []Route {
	r, ok := s.handler.(*mux.Router)
	if !ok {
		return nil
	}
	var out []Route
	_ = r.Walk(func(rt *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := rt.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, err := rt.GetMethods()
		if err != nil {
			return nil
		}
		for _, m := range methods {
			out = append(out, Route{Method: m, Path: path})
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
