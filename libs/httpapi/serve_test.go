package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Serve answers until its context ends, then runs Stopping before the
// drain, lets the request in flight finish, and returns nil; it logs the
// serving line with the plane's name and attributes.
func TestServeDrainsTheRequestInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	var stopping atomic.Bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(inside)
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})
	log := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, Serving{
			Name: "gate-test", Server: &http.Server{Handler: h}, Drain: 10 * time.Second,
			Log: slog.New(slog.NewJSONHandler(log, nil)), Attrs: []any{"queen", "http://broker"},
			Stopping: func() { stopping.Store(true); close(release) },
		})
	}()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	slow := make(chan int, 1)
	go func() {
		res, err := client.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			slow <- 0
			return
		}
		res.Body.Close()
		slow <- res.StatusCode
	}()
	<-inside
	cancel()
	if code := <-slow; code != http.StatusNoContent {
		t.Fatalf("the request in flight got %d, want its answer", code)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !stopping.Load() {
		t.Fatal("Stopping did not run")
	}
	if _, err := client.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Fatal("still serving after the drain")
	}
	if out := log.String(); !strings.Contains(out, `"msg":"gate-test serving"`) || !strings.Contains(out, `"queen":"http://broker"`) || !strings.Contains(out, `"msg":"gate-test shutting down"`) {
		t.Fatalf("log: %s", out)
	}
}

// A listener that fails is Serve's error, naming the address.
func TestServeReturnsTheListenersFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = Serve(context.Background(), ln, Serving{Server: &http.Server{Handler: http.NotFoundHandler()}, Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "serving 127.0.0.1:") {
		t.Fatalf("Serve on a closed listener: %v", err)
	}
}
