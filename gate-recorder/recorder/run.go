package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/queen-mq/gate/gate-recorder/config"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
)

// Run is the whole gate-recorder process: open (and migrate) the history
// database, then drain, sample and prune until ctx ends, with /health and
// /metrics on GATE_RECORDER_BIND unless it is "off". Without PG_HOST (and
// PG_URL) there is nothing to record and it refuses to start; a
// configured database that does not answer is a one-line error naming
// the knob. Its pieces are services (package libs/service): the ops server
// and the recorder start in that order and stop in the reverse one, the
// recorder with a last drain.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	if !cfg.History.Enabled() {
		return fmt.Errorf("%w: PG_HOST (or PG_URL) is not set, so gate-recorder has nothing to write to; set PG_HOST to the history database, or do not run gate-recorder (Gate limits exactly as well without history)", errNoHistory)
	}
	client, err := queen.New(cfg.QueenURL)
	if err != nil {
		return fmt.Errorf("QUEEN_URL: %w", err)
	}
	db, err := history.Open(ctx, cfg.History, history.Options{Logger: log})
	if err != nil {
		return err
	}
	defer db.Close()
	metrics := NewMetrics()
	r, err := New(Config{Client: client, Namespace: cfg.KVNamespace, DB: db, Flush: cfg.Flush, Logger: log, Metrics: metrics})
	if err != nil {
		return err
	}
	var parts []service.Service
	if cfg.Bind != "off" {
		parts = append(parts, &opsServer{bind: cfg.Bind, handler: opsHandler(db, metrics)})
	}
	parts = append(parts, r)
	log.Info("gate-recorder starting", "queen", cfg.QueenURL, "namespace", cfg.KVNamespace, "history", cfg.History.Describe(), "schema", db.Schema(), "flush", cfg.Flush)
	// The parts run until StopAll, not until ctx: the recorder's last
	// drain comes before /health goes away.
	if err := service.StartAll(context.WithoutCancel(ctx), parts...); err != nil {
		return err
	}
	<-ctx.Done()
	service.StopAll(parts...)
	log.Info("gate-recorder stopped")
	return nil
}

// opsServer serves handler on bind until it stops; requests in flight are
// cut at stop, as the process is ending.
type opsServer struct {
	service.Base
	bind    string
	handler http.Handler
}

func (s *opsServer) Start(ctx context.Context) error {
	ctx, ok := s.StartInit(ctx)
	if !ok {
		return nil
	}
	ln, err := net.Listen("tcp", s.bind)
	if err != nil {
		return s.Fail(fmt.Errorf("GATE_RECORDER_BIND=%s: %w", s.bind, err))
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 5 * time.Second}
	s.Go(func() { _ = srv.Serve(ln) })
	s.Go(func() {
		<-ctx.Done()
		_ = srv.Close()
	})
	s.Ready()
	return nil
}

// opsHandler answers GET /health: 200 while the database answers, 503
// (naming the failure) when it does not; the drain keeps retrying either
// way. GET /metrics is the Prometheus registry of m.
func opsHandler(db *history.DB, m *Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if err := db.Ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "degraded", "error": "history database: " + err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "healthy"})
	})
	return mux
}
