package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/queen-mq/gate/gate-recorder/config"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/wire"
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
		parts = append(parts, &service.HTTP{
			Name: "gate-recorder ops", Bind: cfg.Bind, Knob: "GATE_RECORDER_BIND", Log: log,
			Server: &http.Server{Handler: opsHandler(db, metrics), ReadHeaderTimeout: 5 * time.Second},
		})
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
			_ = json.NewEncoder(w).Encode(wire.RecorderHealth{Status: "degraded", Error: "history database: " + err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(wire.RecorderHealth{Status: "healthy"})
	})
	return mux
}
