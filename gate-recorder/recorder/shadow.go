package recorder

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/shadow"
	"github.com/queen-mq/gate/libs/store"
)

// ShadowLagMs is how long after a minute ends its shadow is evaluated,
// beyond one drain period: a relay hands a second over within its 10 s
// flush, and this recorder commits it within a drain.
const ShadowLagMs = 30_000

// ShadowCatchUpMinutes bounds one graph's evaluation per pass (a recorder
// that was down catches up a day per minute).
const ShadowCatchUpMinutes = 1440

// ShadowPass is what one pass evaluated.
type ShadowPass struct {
	// Graphs is the candidates evaluated; Minutes the minutes written;
	// Failed the candidates that could not be (each logged).
	Graphs, Minutes, Failed int
}

// Shadow evaluates every shadow candidate (kv rows shadow:{app}:{graph})
// over the minutes completed since its last pass, carrying its virtual
// backlog and open windows in shadow_state, and writes each node's
// per-minute result to shadow_minutes. It never touches a counter: the
// candidate runs only here, through budget.Table (libs/shadow). The error
// is the listing's; a candidate that fails is logged and counted.
func (r *Recorder) Shadow(ctx context.Context) (ShadowPass, error) {
	var pass ShadowPass
	list, err := r.store.Shadows(ctx)
	if err != nil {
		return pass, err
	}
	now := r.cfg.Clock.Now().UnixMilli()
	upTo := now - ShadowLagMs - r.cfg.Flush.Milliseconds()
	upTo -= upTo % 60000
	for _, sh := range list {
		n, err := r.shadowOne(ctx, sh, upTo)
		if err != nil {
			pass.Failed++
			r.log.Warn("shadow limit not evaluated", "app", sh.Application, "graph", sh.Graph, "error", err)
			continue
		}
		if n > 0 {
			pass.Graphs++
			pass.Minutes += n
		}
	}
	return pass, nil
}

// shadowOne evaluates one candidate up to upTo (a minute boundary) and
// returns the minutes written.
func (r *Recorder) shadowOne(ctx context.Context, sh store.Shadow, upTo int64) (int, error) {
	doc, found, err := r.store.Get(ctx, sh.Application, sh.Graph)
	if err != nil || !found || doc.Legacy {
		return 0, err
	}
	d, err := graph.Parse(doc.Body)
	if err != nil {
		return 0, fmt.Errorf("reading the stored document: %w", err)
	}
	cand, err := shadow.ParseCandidate(sh.Candidate, d.NodeNames())
	if err != nil {
		return 0, err
	}
	res, err := shadow.Compile(sh.Application, sh.Graph, doc.Body, cand, plan.Options{})
	if err != nil {
		return 0, err
	}
	if !res.Accepted() {
		return 0, fmt.Errorf("the candidate no longer compiles against the stored document: %v", res.Errors())
	}
	db := r.cfg.DB
	st := shadow.State{Through: sh.Since - sh.Since%60000}
	if saved, ok, err := db.ShadowState(ctx, sh.Application, sh.Graph); err != nil {
		return 0, err
	} else if ok && saved.Since == sh.Since {
		if err := json.Unmarshal(saved.State, &st); err != nil {
			return 0, fmt.Errorf("reading the carried shadow state: %w", err)
		}
	}
	if st.Through >= upTo {
		return 0, nil
	}
	to := min(upTo, st.Through+ShadowCatchUpMinutes*60000)
	sessions := []int64{sh.Since}
	if d.Watch != nil && d.Watch.StartedAt != nil {
		sessions = append(sessions, *d.Watch.StartedAt)
	}
	secs, err := db.ShadowArrivals(ctx, sh.Application, sh.Graph, sessions, st.Through, to)
	if err != nil {
		return 0, err
	}
	arr := map[shadow.NodePath][]shadow.Second{}
	for _, s := range secs {
		k := shadow.NodePath{Node: s.Node, Path: s.Path}
		arr[k] = append(arr[k], shadow.Second{T: s.Second, Items: s.Items, Cost: s.Cost})
	}
	// A scoped or op-filtered candidate is judged per recorded value and
	// op; an unkeyed one reads only the totals.
	if needs := shadow.Needs(cand); len(needs) > 0 {
		keyed, err := db.ShadowKeyArrivals(ctx, sh.Application, sh.Graph, sessions, st.Through, to)
		if err != nil {
			return 0, err
		}
		attachKeys(arr, keyed, needs)
	}
	ev, err := shadow.NewEvaluator(res.Plan, cand.NodeNames(), st)
	if err != nil {
		return 0, err
	}
	mins := ev.Run(to, arr)
	body, err := json.Marshal(ev.State())
	if err != nil {
		return 0, err
	}
	out := make([]history.ShadowMinute, 0, len(mins))
	for _, m := range mins {
		out = append(out, history.ShadowMinute{Node: m.Node, Minute: m.Minute, Arrived: m.Arrived, Admitted: m.Admitted, Delayed: m.Delayed,
			Backlog: m.Backlog, DelayP50Ms: m.DelayP50Ms, DelayMaxMs: m.DelayMaxMs, OldestWaitingMs: m.OldestWaitingMs,
			Approximate: m.Approximate, Missing: m.Missing})
	}
	if err := db.WriteShadow(ctx, sh.Application, sh.Graph, history.ShadowState{Since: sh.Since, Through: ev.Through(), State: body}, out, r.cfg.Clock.Now()); err != nil {
		return 0, err
	}
	return len(out), nil
}

// attachKeys puts each keyed count on its recorded second (both are
// ordered by second); a count whose second has no total is dropped (the
// totals are what arrived), and a node the candidate reads no values of
// keeps its totals only.
func attachKeys(arr map[shadow.NodePath][]shadow.Second, keyed []history.ShadowKeySecond, needs map[string]shadow.Need) {
	cursor := map[shadow.NodePath]int{}
	for _, k := range keyed {
		if _, ok := needs[k.Node]; !ok {
			continue
		}
		np := shadow.NodePath{Node: k.Node, Path: k.Path}
		secs := arr[np]
		i := cursor[np]
		for i < len(secs) && secs[i].T < k.Second {
			i++
		}
		cursor[np] = i
		if i < len(secs) && secs[i].T == k.Second {
			secs[i].Keys = append(secs[i].Keys, shadow.KeyCount{Scope: k.Scope, Op: k.Op, Items: k.Items, Cost: k.Cost})
		}
	}
}
