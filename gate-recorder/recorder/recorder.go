package recorder

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/queen-mq/gate/gate-recorder/config"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/store"
)

// Fixed periods (gate-runtime §5.3, §8.2).
const (
	// SnapshotTimeout bounds one graph's snapshot.
	SnapshotTimeout = 8 * time.Second
	// callTimeout bounds one drain's broker and database calls.
	callTimeout = 30 * time.Second
	// finalDrainTimeout bounds the drain at stop.
	finalDrainTimeout = 5 * time.Second
)

// Config is what a Recorder runs with.
type Config struct {
	// Client is the broker; Namespace GATE_KV_NAMESPACE.
	Client    *queen.Client
	Namespace string
	// DB is the open history database.
	DB *history.DB
	// Flush is the drain period (GATE_RECORDER_FLUSH_MS by default).
	Flush time.Duration
	// Metrics receives the drain outcomes; nil keeps none.
	Metrics *Metrics
	// Clock times the drains, the minute snapshots and the hourly
	// retention (nil is the wall clock); Logger defaults to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
}

// WithDefaults returns c with its zero fields filled: the knob's drain
// period, the wall clock, slog.Default(). A negative period counts as
// zero.
func (c Config) WithDefaults() Config {
	c.Flush = cmp.Or(max(c.Flush, 0), time.Duration(config.FlushMs.Default)*time.Millisecond)
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Recorder drains, samples and prunes.
type Recorder struct {
	service.Base

	cfg   Config
	log   *slog.Logger
	store *store.Store

	lastMinute int64
	lastHour   int64
	failing    int

	// vendor is the vendor meter sampler's memory (vendor.go).
	vendor        vendorState
	vendorFailing int
}

// New checks cfg and returns a Recorder ready to Start.
func New(cfg Config) (*Recorder, error) {
	if cfg.Client == nil || cfg.DB == nil || cfg.Namespace == "" {
		return nil, errors.New("recorder: Client, Namespace and DB are required")
	}
	cfg = cfg.WithDefaults()
	return &Recorder{cfg: cfg, log: cfg.Logger, store: store.New(cfg.Client, cfg.Namespace)}, nil
}

// Start runs the loop on its own goroutine until Stop or the end of ctx: a
// pass at once, then a drain every Flush, a snapshot pass at each new
// minute, retention at each new hour (and at start); at the end, one last
// drain. Starting a running recorder does nothing.
func (r *Recorder) Start(ctx context.Context) error {
	ctx, ok := r.StartInit(ctx)
	if !ok {
		return nil
	}
	tick := r.cfg.Clock.NewTicker(r.cfg.Flush)
	r.Go(func() {
		defer tick.Stop()
		r.Tick(ctx)
		for {
			select {
			case <-ctx.Done():
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalDrainTimeout)
				_, _ = r.Drain(fctx)
				cancel()
				return
			case <-tick.C():
				r.Tick(ctx)
			}
		}
	})
	r.Go(func() { r.vendorLoop(ctx) })
	r.Ready()
	return nil
}

// vendorLoop samples the vendor meter rows every VendorPeriod until ctx
// ends, logging the first failure of a run of them and its recovery.
func (r *Recorder) vendorLoop(ctx context.Context) {
	tick := r.cfg.Clock.NewTicker(VendorPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		if _, err := r.SampleVendor(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.vendorFailing++
			if r.vendorFailing == 1 || r.vendorFailing%60 == 0 {
				r.log.Warn("vendor meter sampling failed; the spans are written once it recovers", "error", err, "failures", r.vendorFailing)
			}
		} else if r.vendorFailing > 0 {
			r.log.Info("vendor meter sampling recovered", "afterFailures", r.vendorFailing)
			r.vendorFailing = 0
		}
	}
}

// Tick is one period: drain, and when a new minute (hour) began, the
// snapshot (retention) pass.
func (r *Recorder) Tick(ctx context.Context) {
	now := r.cfg.Clock.Now()
	if res, err := r.Drain(ctx); err != nil {
		r.failing++
		if m := r.cfg.Metrics; m != nil {
			m.drainFailed(r.failing)
		}
		if r.failing == 1 || r.failing%30 == 0 {
			r.log.Warn("history drain failed; the relays keep buffering (an hour of seconds per stage)", "error", err, "failures", r.failing)
		}
	} else {
		if r.failing > 0 {
			r.log.Info("history drain recovered", "afterFailures", r.failing)
		}
		r.failing = 0
		if m := r.cfg.Metrics; m != nil {
			m.drained(res, float64(r.cfg.Clock.Now().UnixMilli())/1000)
		}
		if res.Rows > 0 {
			r.log.Debug("history drained", "rows", res.Rows, "samples", res.Samples, "rollups", res.Rollups, "traces", res.Traces)
		}
	}
	if m := now.UnixMilli() / 60000; m != r.lastMinute {
		r.lastMinute = m
		if err := r.Sample(ctx); err != nil {
			r.log.Warn("queue snapshots failed", "error", err)
		}
		if _, err := r.Shadow(ctx); err != nil {
			r.log.Warn("shadow limits pass failed", "error", err)
		}
	}
	if h := now.UnixMilli() / 3600000; h != r.lastHour {
		r.lastHour = h
		p, err := r.Prune(ctx)
		if err != nil {
			r.log.Warn("history retention failed", "error", err)
		} else if len(p.PartitionsDropped) > 0 || p.Rollups+p.Traces+p.Recorders+p.Snapshots+p.ConfigEvents+p.Versions > 0 {
			r.log.Info("history retention", "partitionsDropped", len(p.PartitionsDropped), "rollups", p.Rollups, "traces", p.Traces,
				"recorders", p.Recorders, "snapshots", p.Snapshots, "annotations", p.ConfigEvents, "revisions", p.Versions)
		}
	}
}

// Drained is what one drain committed.
type Drained struct {
	// Rows is the handover rows read; Deleted those deleted after commit.
	Rows, Deleted int
	// Samples, Rollups, Traces and KeySamples are the rows written.
	Samples, Rollups, Traces, KeySamples int
}

// Drain reads every handover row, commits them to PostgreSQL in one
// transaction and deletes each row at the version read. A database error
// leaves every row in kv (and the relays keep what they hold).
func (r *Recorder) Drain(ctx context.Context) (Drained, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	entries, err := handover.Read(ctx, r.cfg.Client, r.cfg.Namespace)
	if err != nil {
		return Drained{}, err
	}
	d := Drained{Rows: len(entries)}
	if len(entries) == 0 {
		return d, nil
	}
	b := ToBatch(entries)
	for _, e := range entries {
		if e.Err != nil {
			r.log.Warn("handover row unreadable; deleted", "key", e.Key, "error", e.Err)
		}
	}
	if err := r.cfg.DB.Write(ctx, b); err != nil {
		return d, err
	}
	d.Samples, d.Rollups, d.Traces, d.KeySamples = len(b.Samples), len(b.Rollups), len(b.Traces), len(b.KeySamples)
	if m := r.cfg.Metrics; m != nil {
		for _, e := range entries {
			if e.Err == nil && e.Row.Kind == handover.KindWatch && e.Row.Watch != nil {
				m.watchLost(e.Row.App, e.Row.Graph, e.Row.Node, e.Row.Watch.Lost)
			}
		}
	}
	d.Deleted, err = handover.Delete(ctx, r.cfg.Client, r.cfg.Namespace, entries)
	return d, err
}

// ToBatch turns handover rows into one history batch.
func ToBatch(entries []handover.Entry) history.Batch {
	var b history.Batch
	for _, e := range entries {
		if e.Err != nil {
			continue
		}
		row := e.Row
		target := row.Graph + "." + row.Node
		switch row.Kind {
		case handover.KindSamples:
			for _, s := range row.Samples {
				b.Samples = append(b.Samples, history.Sample{App: row.App, Graph: row.Graph, Node: row.Node, Path: row.Path,
					Session: row.Session, Recorder: row.Recorder, Second: s[0], Items: s[1], Cost: s[2]})
			}
		case handover.KindKeys:
			if k := row.Keys; k != nil {
				for _, e := range k.Entries {
					b.KeySamples = append(b.KeySamples, history.KeySample{App: row.App, Graph: row.Graph, Node: row.Node, Path: row.Path,
						Session: row.Session, Recorder: row.Recorder, Second: k.Second, Scope: e.Scope, Op: e.Op, Items: e.Items, Cost: e.Cost})
				}
				if k.Overflow > 0 {
					b.KeySamples = append(b.KeySamples, history.KeySample{App: row.App, Graph: row.Graph, Node: row.Node, Path: row.Path,
						Session: row.Session, Recorder: row.Recorder, Second: k.Second, Overflow: true, Items: k.Overflow, Cost: k.OverflowCost})
				}
			}
		case handover.KindWatch:
			if w := row.Watch; w != nil {
				b.Recorders = append(b.Recorders, history.Recorder{ID: row.Recorder, App: row.App, Graph: row.Graph, Node: row.Node,
					Session: row.Session, Started: w.Started, Through: w.Through, Lost: w.Lost})
			}
		case handover.KindRollup:
			for _, l := range row.Lanes {
				b.Rollups = append(b.Rollups, history.RollupCount{Recorder: row.Recorder, App: row.App, Target: target, Lane: l.Path,
					Minute: row.Minute, Admitted: l.Admitted, Denied: l.Denied, Cost: l.Cost})
			}
		case handover.KindTraces:
			for _, t := range row.Traces {
				b.Traces = append(b.Traces, history.Trace{Ref: t.Ref(row.Recorder), At: t.At, App: row.App, Target: target,
					Lane: t.Path, Op: t.Op, Outcome: t.Outcome, BudgetID: t.BudgetID})
			}
		}
	}
	return b
}

// Prune is the hourly pass as of the clock's now: retention, then sealing
// the hours of minute roll-ups that can no longer change (the Watch
// summary reads them whole) and packing the hours of per-second samples
// that can no longer change (a replay reads them as one row per path).
func (r *Recorder) Prune(ctx context.Context) (history.Pruned, error) {
	now := r.cfg.Clock.Now()
	p, err := r.cfg.DB.Prune(ctx, now)
	if err != nil {
		return p, err
	}
	if _, err := r.cfg.DB.PruneShadow(ctx, now); err != nil {
		return p, err
	}
	if n, err := r.cfg.DB.SealHours(ctx, now); err != nil {
		return p, err
	} else if n > 0 {
		r.log.Debug("roll-up hours sealed", "hours", n)
	}
	if n, err := r.cfg.DB.SealSeries(ctx, now); err != nil {
		return p, err
	} else if n > 0 {
		r.log.Debug("sample hours sealed", "hours", n)
	}
	if n, err := r.cfg.DB.PruneVendorSpans(ctx, now); err != nil {
		return p, err
	} else if n > 0 {
		r.log.Debug("vendor meter spans pruned", "spans", n)
	}
	return p, nil
}
