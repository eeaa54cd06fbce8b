package server

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/history"
)

// annotateTimeout bounds writing one configuration annotation: a declare
// never waits long on (or fails because of) history.
const annotateTimeout = 2 * time.Second

// UseHistory gives the server its PostgreSQL history (nil: none). Call it
// before serving; Run does it from the PG_ knobs.
func (s *Server) UseHistory(db *history.DB) { s.hist.Store(db) }

// History is the server's history database, nil without PG_HOST.
func (s *Server) History() *history.DB { return s.hist.Load() }

func (s *Server) historyDB() *history.DB { return s.hist.Load() }

// hasHistory is the declare rule watch-history's fact.
func (s *Server) hasHistory() *bool {
	v := s.historyDB() != nil
	return &v
}

// previous is what the store held for a graph before a declare.
type previous struct {
	// known is false when the store could not be read.
	known   bool
	existed bool
	body    []byte
	watch   bool
}

// annotate records a configuration annotation after a successful declare:
// Created, Watch started, Limits activated or Configuration updated;
// nothing when the stored document is unchanged, when there is no history,
// or when the previous document is unknown. A history failure is logged as
// skipped, never returned.
func (s *Server) annotate(ctx context.Context, app, name string, prev previous, stored []byte, doc *graph.Document) {
	db := s.historyDB()
	if db == nil {
		return
	}
	if !prev.known {
		s.log.Warn("configuration annotation skipped: the previous document could not be read", "application", app, "graph", name)
		return
	}
	if prev.existed && bytes.Equal(prev.body, stored) {
		return
	}
	ch := history.Annotation(prev.existed, prev.watch, doc.Watching(), doc.Version)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), annotateTimeout)
	defer cancel()
	if err := db.AddConfigEvent(actx, history.ConfigEvent{App: app, Graph: name, At: s.now().UnixMilli(), Change: ch}); err != nil {
		s.log.Warn("configuration annotation skipped: history is unavailable", "application", app, "graph", name, "label", ch.Label, "error", err)
	}
}

// openHistory opens the history the PG_ knobs name (nil without PG_HOST)
// and says plainly which way gate-api runs.
func openHistory(ctx context.Context, cfg config.Config, log *slog.Logger) (*history.DB, error) {
	db, err := history.Open(ctx, cfg.History, history.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	if db == nil {
		log.Info("no PostgreSQL history: PG_HOST is not set; Gate limits exactly as well, Watch is refused (rule watch-history) and the history routes answer 503 or empty")
		return nil, nil
	}
	log.Info("PostgreSQL history open", "history", cfg.History.Describe(), "schema", db.Schema())
	return db, nil
}

// contextWithTimeout is the request's context bounded by d.
func contextWithTimeout(q *req, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(q.r.Context(), d)
}
