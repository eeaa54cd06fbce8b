package recorder

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/plan"
)

// Vendor meter sampling: every VendorPeriod the recorder reads the meter
// row (libs/budget MeterRow) of every budget that mirrors a vendor meter,
// in one kv getMany, and writes a span to history (vendor_meter) when one
// appears, is restated with a later end, is replaced by another limit, or
// goes before its end. A limit that simply lapses needs no write: its span
// already ends at Until.
const (
	// VendorPeriod is how often the meter rows are read: a span's start
	// and early end are recorded to within it.
	VendorPeriod = time.Second
	// vendorRelist is how often the stored graphs are listed again to
	// find the mirrored budgets (a document compiles only when its kv row
	// changed).
	vendorRelist = 10 * time.Second
	// vendorTimeout bounds one pass.
	vendorTimeout = 5 * time.Second
)

// mirror is one mirrored budget of a stored graph.
type mirror struct {
	app, graph, node, budget string
	key                      string // the meter row's kv key
	timeMs                   int64
}

// compiledDoc is a stored document's mirrored budgets, kept by its kv row.
type compiledDoc struct {
	row     int64
	mirrors []mirror
}

// vendorState is the sampler's memory between passes.
type vendorState struct {
	mu     sync.Mutex
	docs   map[string]compiledDoc // by the document's kv key
	listed time.Time
	// open is the span last written per meter key, while it holds.
	open map[string]history.VendorSpan
}

// VendorSampled is what one pass did.
type VendorSampled struct {
	// Budgets is the mirrored budgets read; Live those with a limit in
	// force; Written the spans written.
	Budgets, Live, Written int
}

// SampleVendor is one pass of the vendor meter sampler (see VendorPeriod).
// A failed write keeps what was known, so the next pass writes it again.
func (r *Recorder) SampleVendor(ctx context.Context) (VendorSampled, error) {
	ctx, cancel := context.WithTimeout(ctx, vendorTimeout)
	defer cancel()
	v := &r.vendor
	v.mu.Lock()
	defer v.mu.Unlock()
	now := r.cfg.Clock.Now()
	if v.docs == nil || now.Sub(v.listed) >= vendorRelist || now.Before(v.listed) {
		if err := r.listMirrors(ctx); err != nil {
			return VendorSampled{}, err
		}
		v.listed = now
	}
	var ms []mirror
	for _, d := range v.docs {
		ms = append(ms, d.mirrors...)
	}
	out := VendorSampled{Budgets: len(ms)}
	if len(ms) == 0 && len(v.open) == 0 {
		return out, nil
	}
	keys := make([]string, 0, len(ms))
	for _, m := range ms {
		keys = append(keys, m.key)
	}
	rows, err := readMeters(ctx, r.cfg.Client, r.cfg.Namespace, keys, vendorReadKeys)
	if err != nil {
		return out, err
	}
	nowMs := now.UnixMilli()
	var writes []history.VendorSpan
	next := make(map[string]history.VendorSpan, len(v.open))
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		seen[m.key] = true
		prev, had := v.open[m.key]
		row, ok := rows[m.key]
		if !ok || row.Until <= nowMs {
			if had && prev.Until > nowMs {
				// Gone before its end: the vendor allowed the declared
				// count again (observe deleted the row).
				prev.Ended, prev.Seen = nowMs, nowMs
				writes = append(writes, prev)
			}
			continue
		}
		out.Live++
		s := history.VendorSpan{App: m.app, Graph: m.graph, Node: m.node, Budget: m.budget,
			Since: row.Since, Until: row.Until, Seen: nowMs, Limit: row.Limit, Declared: row.Declared, TimeMs: m.timeMs,
			VendorLimit: row.VendorLimit, VendorWindowMs: row.VendorWindowMs, Headers: row.Headers, Policy: row.Policy}
		if had && prev.Since != s.Since && prev.Until > s.Since {
			// Another limit replaced this one when it was stated.
			prev.Ended, prev.Seen = s.Since, nowMs
			writes = append(writes, prev)
		}
		next[m.key] = s
		if !had || prev.Since != s.Since || prev.Until != s.Until || prev.Limit != s.Limit {
			writes = append(writes, s)
		} else {
			next[m.key] = prev
		}
	}
	// A budget no longer mirrored (its graph was changed or deleted) with
	// a span open: the span ends now.
	for key, prev := range v.open {
		if !seen[key] && prev.Until > nowMs {
			prev.Ended, prev.Seen = nowMs, nowMs
			writes = append(writes, prev)
		}
	}
	if err := r.cfg.DB.PutVendorSpans(ctx, writes); err != nil {
		return out, err
	}
	v.open = next
	out.Written = len(writes)
	return out, nil
}

// vendorReadKeys is the most meter rows one getMany reads: the broker
// counts a getMany's keys against its per-call budget of 1,024.
const vendorReadKeys = 1000

// readMeters reads the meter rows of keys, at most chunk per call.
func readMeters(ctx context.Context, kv budget.KV, ns string, keys []string, chunk int) (map[string]budget.MeterRow, error) {
	out := make(map[string]budget.MeterRow, len(keys))
	for len(keys) > 0 {
		n := min(len(keys), max(chunk, 1))
		rows, err := budget.ReadMeters(ctx, kv, ns, keys[:n])
		if err != nil {
			return nil, err
		}
		for k, v := range rows {
			out[k] = v
		}
		keys = keys[n:]
	}
	return out, nil
}

// listMirrors reads the stored graphs and compiles the ones whose kv row
// changed, keeping each one's mirrored budgets.
func (r *Recorder) listMirrors(ctx context.Context) error {
	v := &r.vendor
	listing, err := r.store.List(ctx)
	if err != nil {
		return fmt.Errorf("reading the stored graphs: %w", err)
	}
	docs := make(map[string]compiledDoc, len(listing.Documents))
	for _, d := range listing.Documents {
		if c, ok := v.docs[d.Key]; ok && c.row == d.Row && d.Row != 0 {
			docs[d.Key] = c
			continue
		}
		c := compiledDoc{row: d.Row}
		res, err := declare.Compile(declare.Input{App: d.App, Name: d.Graph, Body: d.Body, Target: d.Legacy})
		if err == nil && res.Plan != nil {
			// A graph in Watch follows the vendor's meter of the budgets
			// it declares (observe writes their rows): read them too.
			p := res.Plan
			if p.Watching {
				p = plan.Enforcing(res.Doc, plan.Options{})
			}
			for i := range p.Nodes {
				n := &p.Nodes[i]
				for j := range n.Budgets {
					b := &n.Budgets[j]
					if b.VendorMeter == nil {
						continue
					}
					c.mirrors = append(c.mirrors, mirror{app: p.Application, graph: p.Graph, node: n.Name, budget: b.ID,
						key: b.VendorMeter.Key, timeMs: b.TimeMs})
				}
			}
		}
		docs[d.Key] = c
	}
	v.docs = docs
	return nil
}
