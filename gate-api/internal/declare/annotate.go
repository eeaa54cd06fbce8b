package declare

import (
	"bytes"
	"context"
	"time"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/history"
)

// annotateTimeout bounds writing one configuration annotation: a declare
// never waits long on (or fails because of) history.
const annotateTimeout = 2 * time.Second

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
func (d *Declarer) annotate(ctx context.Context, app, name string, prev previous, stored []byte, doc *graph.Document) {
	db := d.p.History()
	if db == nil {
		return
	}
	if !prev.known {
		d.p.Log.Warn("configuration annotation skipped: the previous document could not be read", "app", app, "graph", name)
		return
	}
	if prev.existed && bytes.Equal(prev.body, stored) {
		return
	}
	ch := history.Annotation(prev.existed, prev.watch, doc.Watching(), doc.Version)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), annotateTimeout)
	defer cancel()
	if err := db.AddConfigEvent(actx, history.ConfigEvent{App: app, Graph: name, At: d.p.Clock.Now().UnixMilli(), Change: ch}); err != nil {
		d.p.Log.Warn("configuration annotation skipped: history is unavailable", "app", app, "graph", name, "label", ch.Label, "error", err)
	}
}
