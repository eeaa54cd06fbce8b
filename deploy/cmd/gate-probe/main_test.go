package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The probe is what compose's health checks run: 0 only when every URL
// answers 200, 1 otherwise, 2 for a usage error.
func TestProbeExitCodes(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"healthy", []string{ok.URL}, 0},
		{"one of two unhealthy", []string{ok.URL, down.URL}, 1},
		{"nothing listening", []string{"http://127.0.0.1:1/health"}, 1},
		{"no URL", nil, 2},
		{"bad wait", []string{"--wait", "soon", ok.URL}, 2},
		{"wait on a healthy one", []string{"--wait", "5s", ok.URL}, 0},
	} {
		if got := run(tc.args); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
