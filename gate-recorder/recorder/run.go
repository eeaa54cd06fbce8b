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
)

// Run is the whole gate-recorder process: open (and migrate) the history
// database, then drain, sample and prune until ctx ends. Without PG_HOST
// (and PG_URL) there is nothing to record and it refuses to start; a
// configured database that does not answer is a one-line error naming
// the knob.
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
	if cfg.Bind != "off" {
		ln, err := net.Listen("tcp", cfg.Bind)
		if err != nil {
			return fmt.Errorf("GATE_RECORDER_BIND=%s: %w", cfg.Bind, err)
		}
		srv := &http.Server{Handler: opsHandler(db, metrics), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	log.Info("gate-recorder starting", "queen", cfg.QueenURL, "namespace", cfg.KVNamespace, "history", cfg.History.Describe(), "schema", db.Schema(), "flush", cfg.Flush)
	r.Start(ctx)
	<-r.Stopped()
	log.Info("gate-recorder stopped")
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
