package recorder

import (
	"context"
	"fmt"
	"log/slog"

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
	r, err := New(Config{Client: client, Namespace: cfg.KVNamespace, DB: db, Flush: cfg.Flush, Logger: log})
	if err != nil {
		return err
	}
	log.Info("gate-recorder starting", "queen", cfg.QueenURL, "namespace", cfg.KVNamespace, "history", cfg.History.Describe(), "schema", db.Schema(), "flush", cfg.Flush)
	r.Start(ctx)
	<-r.Stopped()
	log.Info("gate-recorder stopped")
	return nil
}
