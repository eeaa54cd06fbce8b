package service

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest/logsink"
)

func get(t *testing.T, addr string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestHTTPServesUntilStoppedAndDrainsTheRequestInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var stopping atomic.Bool
	var logged logsink.Sink
	h := &HTTP{
		Log: slog.New(slog.NewJSONHandler(&logged, nil)), Attrs: []any{"queen", "http://broker"},
		Server: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("slow") != "" {
				close(entered)
				<-release
			}
			_, _ = io.WriteString(w, "ok")
		})},
		Bind: "127.0.0.1:0", Name: "gate-test", Drain: 5 * time.Second,
		Stopping: func() { stopping.Store(true) },
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, h.Addr()); code != 200 || body != "ok" {
		t.Fatalf("GET answered %d %q", code, body)
	}
	slow := make(chan string, 1)
	go func() {
		c := &http.Client{Timeout: 10 * time.Second}
		res, err := c.Get("http://" + h.Addr() + "/?slow=1")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		slow <- string(b)
	}()
	<-entered
	stopped := make(chan struct{})
	go func() { h.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a request was still in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if got := <-slow; got != "ok" {
		t.Fatalf("the request in flight at Stop got %q, want its answer", got)
	}
	<-stopped
	if !stopping.Load() {
		t.Fatal("Stopping did not run")
	}
	if err := h.Err(); err != nil {
		t.Fatalf("a clean stop left Err %v", err)
	}
	if _, err := net.DialTimeout("tcp", h.Addr(), time.Second); err == nil {
		t.Fatal("the address still accepts connections after Stop")
	}
	out := logged.String()
	if !strings.Contains(out, `"msg":"gate-test serving"`) || !strings.Contains(out, `"queen":"http://broker"`) || !strings.Contains(out, `"msg":"gate-test shutting down"`) {
		t.Fatalf("the serving and shutting-down lines with the plane's name and attributes are missing: %s", out)
	}
}

func TestHTTPRefusesABusyAddressNamingTheKnob(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h := &HTTP{Server: &http.Server{Handler: http.NotFoundHandler()}, Bind: ln.Addr().String(), Knob: "GATE_RELAY_BIND"}
	err = h.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GATE_RELAY_BIND="+ln.Addr().String()) || !strings.Contains(err.Error(), "set GATE_RELAY_BIND") {
		t.Fatalf("Start on a busy address returned %v, want an error naming GATE_RELAY_BIND and the fix", err)
	}
	select {
	case <-h.Stopped():
	default:
		t.Fatal("a failed start left the service running")
	}
}

func TestHTTPStopsOnItsOwnWhenTheListenerFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &HTTP{Server: &http.Server{Handler: http.NotFoundHandler()}, Listener: ln}
	done := make(chan error, 1)
	go func() { done <- h.Serve(context.Background()) }()
	<-h.Started()
	ln.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Serve returned nil after its listener failed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not stop when its listener failed")
	}
}
