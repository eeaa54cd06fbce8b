package declare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	libdeclare "github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/migrate"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// errChanged is why a re-save was skipped: the stored row changed (or a
// v2 row appeared) between the listing and the write.
var errChanged = errors.New("the stored row changed since it was listed")

// ResaveV1 re-saves, once, every stored document that needed v1→v2 mapping
// (a v1 GraphSpec under "graph:", or a v1 target under "spec:") in the v2
// stored form under "graph:{app}:{name}". Relays never write documents, so
// this is where the store converges on v2.
//
// Nothing a user wrote is lost: a document that does not compile is left as
// stored; a "graph:" row is replaced only at the exact version that was
// read; a "spec:" row is deleted only in the same kv call that creates the
// "graph:" row, and only if no "graph:" row exists. The error is non-nil
// only when the store could not be listed (nothing was changed then).
func (d *Declarer) ResaveV1(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	listing, err := d.p.Store.List(ctx)
	if err != nil {
		return err
	}
	resaved, kept := 0, 0
	for _, doc := range listing.Documents {
		if !doc.Legacy && !migrate.IsV1(doc.Body) {
			continue
		}
		if doc.Legacy {
			if g, ok := listing.Find(doc.App, doc.Graph); ok && !g.Legacy {
				d.p.Log.Info("boot re-save: the v1 target is shadowed by a stored graph of the same name, which wins; both rows are left as stored",
					"app", doc.App, "graph", doc.Graph, "key", doc.Key)
				kept++
				continue
			}
		}
		if err := resaveOne(ctx, d.p, doc); err != nil {
			d.p.Log.Warn("boot re-save: the v1 document is left as stored", "app", doc.App, "graph", doc.Graph, "key", doc.Key, "error", err)
			kept++
			continue
		}
		resaved++
	}
	if resaved > 0 || kept > 0 {
		d.p.Log.Info("boot re-save of v1 documents done", "resaved", resaved, "leftAsStored", kept, "listingComplete", listing.Complete)
	}
	return nil
}

// resaveOne maps and compiles one stored v1 document and writes it back in
// v2 shape under preconditions on the row it was read from.
func resaveOne(ctx context.Context, p *plane.Plane, d store.Document) error {
	res, err := libdeclare.Compile(libdeclare.Input{App: d.App, Name: d.Graph, Body: d.Body, Target: d.Legacy, Options: p.Cfg.PlanOptions()})
	if err != nil {
		return fmt.Errorf("it cannot be mapped: %w", err)
	}
	if !res.Accepted() {
		return fmt.Errorf("it does not compile: %s", res.ErrorText())
	}
	v2, err := res.Doc.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding the v2 document: %w", err)
	}
	ns := p.Store.Namespace()
	read, err := p.Client.KV(ctx, queen.KVGet(ns, d.Key))
	if err != nil {
		return fmt.Errorf("re-reading %s: %w", d.Key, err)
	}
	if len(read.Results) != 1 || !read.Results[0].Found || !sameJSON(read.Results[0].Value, d.Body) {
		return fmt.Errorf("%w: %s", errChanged, d.Key)
	}
	version := read.Results[0].Version
	key := plan.DocumentKey(d.App, d.Graph)
	var ops []queen.KVOp
	if d.Legacy {
		// Create the graph row only where none exists, and delete the
		// legacy row only at the version read, in one call: both or neither.
		ops = []queen.KVOp{
			queen.KVPut(ns, key, v2, queen.PutOpts{Forever: true, Expect: queen.Int(0), Required: true}),
			queen.KVDelete(ns, d.Key, queen.DeleteOpts{Expect: queen.Int(version), Required: true}),
		}
	} else {
		ops = []queen.KVOp{queen.KVPut(ns, key, v2, queen.PutOpts{Forever: true, Expect: queen.Int(version), Required: true})}
	}
	out, err := p.Client.KV(ctx, ops...)
	if err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if r := out.Refusal; r != nil {
		if r.KVPrecondition() {
			return fmt.Errorf("%w: %s (%s)", errChanged, key, r.KVReason)
		}
		return fmt.Errorf("writing %s: %w", key, r)
	}
	for _, r := range out.Results {
		if !r.Applied {
			return fmt.Errorf("%w: %s (%s)", errChanged, r.Key, r.Reason)
		}
	}
	attrs := []any{"application", d.App, "graph", d.Graph, "from", d.Key, "to", key, "version", res.Doc.Version, "migrationWarnings", len(res.Migration)}
	if d.Legacy {
		attrs = append(attrs, "deleted", d.Key)
	}
	p.Log.Info("boot re-save: a v1 document was re-saved in v2 shape", attrs...)
	return nil
}

// sameJSON reports whether two JSON values are byte-equal once compacted.
func sameJSON(x, y []byte) bool {
	var bx, by bytes.Buffer
	if json.Compact(&bx, x) != nil || json.Compact(&by, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(bx.Bytes(), by.Bytes())
}

// ResaveUntilDone retries the boot re-save every interval until one pass
// could list the store, or ctx ends.
func (d *Declarer) ResaveUntilDone(ctx context.Context, every time.Duration) {
	t := d.p.Clock.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := d.ResaveV1(ctx); err == nil {
			return
		} else if ctx.Err() == nil {
			d.p.Log.Debug("boot re-save: the store is still unreadable", "error", err)
		}
	}
}
