package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTP is an http.Server as a Service: Start binds (or takes a listener)
// and serves in the background; Stop, or the end of Start's context, stops
// accepting connections, runs Stopping and drains the requests in flight
// within Drain. A listener that fails ends the work on its own; Err says
// why. Every Gate process serves its HTTP planes through it.
type HTTP struct {
	Base

	// Server is the handler and timeouts; a nil ErrorLog becomes WARN
	// lines on Log.
	Server *http.Server
	// Listener, when set, is served instead of binding Bind.
	Listener net.Listener
	// Bind is the host:port to listen on when Listener is nil; Knob names
	// the setting it came from, for the error when the address is taken.
	Bind, Knob string
	// Name names the plane in the log lines ("gate-api serving").
	Name string
	// Drain bounds the graceful drain at stop; 0 closes every connection
	// at once.
	Drain time.Duration
	// Stopping, when set, runs once the work ends, before the drain: it
	// ends the waits (a declare waiting for a relay, a live stream) that
	// the drain should not wait out.
	Stopping func()
	// Log receives the serving and stopping lines (nil: slog.Default()).
	Log *slog.Logger
	// Attrs are logged with the serving line.
	Attrs []any

	mu   sync.Mutex
	addr string
	err  error
}

// Start listens (unless Listener is set) and serves in the background.
func (h *HTTP) Start(ctx context.Context) error {
	ctx, ok := h.StartInit(ctx)
	if !ok {
		return nil
	}
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	ln := h.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", h.Bind); err != nil {
			knob := h.Knob
			if knob == "" {
				knob = "the bind address"
			}
			return h.Fail(fmt.Errorf("%s=%s: %w; set %s to a free host:port", knob, h.Bind, err, knob))
		}
	}
	srv := h.Server
	if srv.ErrorLog == nil {
		srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	h.mu.Lock()
	h.addr, h.err = ln.Addr().String(), nil
	h.mu.Unlock()
	h.Go(func() {
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), errServeFailed) {
			return
		}
		log.Info(h.Name+" shutting down", "timeout", h.Drain.String())
		if h.Stopping != nil {
			h.Stopping()
		}
		if h.Drain <= 0 {
			_ = srv.Close()
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.Drain)
		defer cancel()
		if err := srv.Shutdown(dctx); err != nil {
			h.setErr(fmt.Errorf("draining %s: %w", ln.Addr(), err))
			_ = srv.Close()
		}
	})
	h.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			h.setErr(fmt.Errorf("serving %s: %w", ln.Addr(), err))
			h.End(errServeFailed)
		}
	})
	log.Info(h.Name+" serving", append([]any{"bind", ln.Addr().String()}, h.Attrs...)...)
	h.Ready()
	return nil
}

// errServeFailed ends the work when the listener failed.
var errServeFailed = errors.New("the listener failed")

func (h *HTTP) setErr(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
}

// Addr is the address served ("" before Start).
func (h *HTTP) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addr
}

// Err is why the server stopped on its own or failed its drain; nil while
// it serves and after a clean stop.
func (h *HTTP) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Serve runs h until ctx ends or the listener fails, then stops it and
// returns Err: the blocking form a process's Run uses.
func (h *HTTP) Serve(ctx context.Context) error {
	if err := h.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-h.Stopped():
	}
	h.Stop()
	return h.Err()
}
