package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serving is how Serve runs one HTTP plane.
type Serving struct {
	// Name names the plane in its log lines ("gate-api serving").
	Name string
	// Server is the HTTP server: its handler and timeouts. A nil ErrorLog
	// is set to WARN lines on Log.
	Server *http.Server
	// Drain bounds the graceful drain of the requests in flight once the
	// context ends; 0 means no bound.
	Drain time.Duration
	// Log receives the serving and shutting-down lines; nil means
	// slog.Default().
	Log *slog.Logger
	// Attrs are logged with the serving line.
	Attrs []any
	// Stopping, when set, runs once the context ended, before the drain:
	// it ends the waits (a declare waiting for a relay, a live stream)
	// that the drain should not wait out.
	Stopping func()
}

// WithDefaults fills the zero fields that have a default.
func (s Serving) WithDefaults() Serving {
	s.Name = cmp.Or(s.Name, "gate")
	s.Log = cmp.Or(s.Log, slog.Default())
	return s
}

// Serve serves s.Server on ln until ctx ends, then stops accepting
// connections, runs s.Stopping and waits up to s.Drain for the requests in
// flight. It returns nil after a clean drain, else why serving or the
// drain failed.
func Serve(ctx context.Context, ln net.Listener, s Serving) error {
	s = s.WithDefaults()
	srv := s.Server
	if srv.ErrorLog == nil {
		srv.ErrorLog = slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.Log.Info(s.Name+" serving", append([]any{"bind", ln.Addr().String()}, s.Attrs...)...)
	select {
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.Log.Info(s.Name+" shutting down", "timeout", s.Drain.String())
	if s.Stopping != nil {
		s.Stopping()
	}
	sctx, cancel := context.Background(), context.CancelFunc(func() {})
	if s.Drain > 0 {
		sctx, cancel = context.WithTimeout(context.Background(), s.Drain)
	}
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
