package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// The `vendor settle` scenario: an LLM-like vendor whose calls cost a
// fourth of what Gate estimates. Each item's estimate is its max_tokens
// (the node's cost path); the fake vendor reports usage of a fourth of it,
// and the workers settle every call with that usage. Gates: in every
// judged window the actual tokens of its items reach 85% of the budget's
// count (unsettled, they stay near 25%), and no window's counter ever
// reads above its count.

// Settle scenario constants.
const (
	// SettleNode is the node that charges the tokens.
	SettleNode = "tokens"
	// SettleBudget is its budget: SettleCount tokens per SettleWindowS.
	SettleBudget  = "tpw"
	SettleCount   = 20000
	SettleWindowS = 10
	// SettleEstimate is each item's max_tokens; the vendor uses a fourth.
	SettleEstimate = 400
	SettleFactor   = 4
	// SettleWindows is how many windows the run lasts; the first and the
	// last are not judged.
	SettleWindows = 5
	// SettleMinUse is the least share of the count every judged window's
	// actual tokens must reach.
	SettleMinUse = 0.85
)

// SettleDocument is the scenario's graph: one node costing
// payload.max_tokens against SettleCount tokens per SettleWindowS.
func SettleDocument(app, graph string) map[string]any {
	return workerGraph(app, graph, SettleNode,
		map[string]any{"id": SettleBudget, "count": SettleCount, "timeMs": SettleWindowS * 1000, "subWindows": 1},
		map[string]any{"path": "payload.max_tokens", "default": SettleEstimate, "max": SettleEstimate})
}

// SettleWindow is one window of the budget's counter, as the run saw it.
type SettleWindow struct {
	// End is the window's end (epoch ms).
	End int64 `json:"end"`
	// Items and Actual are the items charged in it and their actual
	// tokens; Estimated what the relays charged for them.
	Items     int   `json:"items"`
	Actual    int64 `json:"actual"`
	Estimated int64 `json:"estimated"`
	// MaxCounter is the highest value the counter was read at.
	MaxCounter int64 `json:"maxCounter"`
	// Use is Actual / the count.
	Use    float64 `json:"use"`
	Judged bool    `json:"judged"`
}

// SettleReport is the `vendor settle` scenario's report.
type SettleReport struct {
	Count    int64          `json:"count"`
	WindowS  int            `json:"windowSeconds"`
	Settled  bool           `json:"settled"`
	Windows  []SettleWindow `json:"windows"`
	Settles  int64          `json:"settles"`
	Refunded int64          `json:"refunded"`
	// Late counts settles whose window had ended (nothing refunded), and
	// Unplaced the items no window is sure for (not in any window's
	// figures: they only lower the use shown).
	Late     int64 `json:"late"`
	Unplaced int64 `json:"unplaced"`
	Fails    int64 `json:"failures"`
	// P99Ms is the settle calls' 99th percentile latency.
	P99Ms float64 `json:"p99Ms"`
}

// settleTally gathers the workers' figures per window.
type settleTally struct {
	mu      sync.Mutex
	windows map[int64]*SettleWindow
	lat     []time.Duration
}

func (t *settleTally) window(end int64) *SettleWindow {
	w := t.windows[end]
	if w == nil {
		w = &SettleWindow{End: end}
		t.windows[end] = w
	}
	return w
}

// tokenVendor answers every call with its usage: a fourth of max_tokens.
type tokenVendor struct{}

func (tokenVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MaxTokens int64 `json:"max_tokens"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body)
	used := max(body.MaxTokens/SettleFactor, 1)
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"usage":{"total_tokens":%d}}`, used)
}

// vendorSettle runs the `vendor settle` scenario.
func (r *runner) vendorSettle(ctx context.Context) (Report, error) {
	cfg := r.cfg
	decl, cleanup, err := r.declare(ctx, func(graph string) map[string]any { return SettleDocument(cfg.App, graph) })
	if err != nil {
		return Report{}, err
	}
	defer cleanup()
	n, ok := decl.Resolved.Node(SettleNode)
	if !ok {
		return Report{}, fmt.Errorf("%w: the declare answer has no node %q", ErrSetup, SettleNode)
	}
	b, ok := n.Budget(SettleBudget)
	if !ok || b.Key == "" {
		return Report{}, fmt.Errorf("%w: the declare answer has no budget %q", ErrSetup, SettleBudget)
	}
	ingress, egress := wire.Str(n.IngressQueue), wire.Str(n.EgressQueue)
	if err := r.waitStages(ctx, SettleNode, 1); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	vendorURL, stopVendor, err := serveVendor(tokenVendor{}, "/v1/chat/completions")
	if err != nil {
		return Report{}, err
	}
	defer stopVendor()

	// Enough for every window at the actual-cost ceiling, and some.
	total := SettleCount / (SettleEstimate / SettleFactor) * SettleWindows * 12 / 10
	fmt.Fprintf(cfg.Log, "gate-e2e: vendor settle on %s/%s: %d tokens per %d s, each call estimated at %d and using %d; settle %v; queueing %d items\n",
		cfg.App, r.graph, SettleCount, SettleWindowS, SettleEstimate, SettleEstimate/SettleFactor, cfg.SettleReports, total)
	tally := &settleTally{windows: map[int64]*SettleWindow{}}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var settles, refunded, late, unplaced, fails atomic.Int64
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 5 * time.Second}
	for range VendorWorkers {
		wg.Go(func() {
			r.settleWorker(runCtx, hc, egress, vendorURL, tally, &settles, &refunded, &late, &unplaced, &fails)
		})
	}
	wg.Go(func() { r.sampleCounter(runCtx, b.Key, tally) })
	if err := r.fillBacklog(ctx, ingress, total, func(i int) map[string]any {
		return map[string]any{"id": r.runID + "-" + strconv.Itoa(i), "model": "fake-llm", "max_tokens": SettleEstimate}
	}); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(SettleWindows * SettleWindowS * time.Second):
	}
	stop()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("interrupted: %w", err)
	}
	sr := SettleReport{Count: SettleCount, WindowS: SettleWindowS, Settled: cfg.SettleReports,
		Settles: settles.Load(), Refunded: refunded.Load(), Late: late.Load(), Unplaced: unplaced.Load(), Fails: fails.Load()}
	tally.mu.Lock()
	for _, w := range tally.windows {
		sr.Windows = append(sr.Windows, *w)
	}
	lat := tally.lat
	tally.mu.Unlock()
	sort.Slice(sr.Windows, func(i, j int) bool { return sr.Windows[i].End < sr.Windows[j].End })
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		sr.P99Ms = float64(lat[min(len(lat)*99/100, len(lat)-1)].Microseconds()) / 1000
	}
	JudgeSettle(&sr)
	rep := Report{Graph: r.graph, Settle: &sr, Gates: settleGates(sr)}
	rep.Pass = allPass(rep.Gates)
	return rep, nil
}

// JudgeSettle computes each window's use and which are judged: every
// window but the first and the last (the run starts and ends inside them).
func JudgeSettle(sr *SettleReport) {
	for i := range sr.Windows {
		w := &sr.Windows[i]
		w.Use = float64(w.Actual) / float64(sr.Count)
		w.Judged = i > 0 && i < len(sr.Windows)-1
	}
}

func settleGates(sr SettleReport) []Gate {
	judged, used := 0, 0
	var worst int64
	over := 0
	for _, w := range sr.Windows {
		worst = max(worst, w.MaxCounter)
		if w.MaxCounter > sr.Count {
			over++
		}
		if !w.Judged {
			continue
		}
		judged++
		if w.Use >= SettleMinUse {
			used++
		}
	}
	return []Gate{
		gate("actual-cost ceiling used", judged > 0 && used == judged,
			fmt.Sprintf("%d of %d judged windows used at least %.0f%% of %d tokens in actual cost", used, judged, 100*SettleMinUse, sr.Count)),
		gate("no window over its count", over == 0,
			fmt.Sprintf("highest counter read %d, count %d; %d windows above it", worst, sr.Count, over)),
	}
}

// settleWorker is an LLM worker: pop a message, call the vendor with its
// max_tokens, settle the usage the vendor reported, ack. Each item counts
// in the window its stamp (or the relay's correction, through the settle's
// answer) says it was charged in.
func (r *runner) settleWorker(ctx context.Context, hc *http.Client, egress, vendorURL string, t *settleTally, settles, refunded, late, unplaced, fails *atomic.Int64) {
	for ctx.Err() == nil {
		for _, m := range r.popWork(ctx, egress, 10) {
			used, err := callTokens(ctx, hc, vendorURL, m.Data)
			if err != nil {
				fails.Add(1)
				continue
			}
			// Unsettled, the stamp's window (the relay's last view of it:
			// an item charged as a window turned may count in the one
			// before); settled, only the window a refund proved.
			var end int64
			if !r.cfg.SettleReports {
				end = stampWindow(m.Data)
			}
			if r.cfg.SettleReports {
				msg, _ := json.Marshal(m)
				c, cancel := context.WithTimeout(ctx, 5*time.Second)
				start := time.Now()
				ans, err := r.api.Settle(c, r.cfg.App, r.graph, SettleNode, wire.SettleBody{Message: msg, ActualCost: used})
				took := time.Since(start)
				cancel()
				if err != nil {
					if fails.Add(1) <= 3 {
						fmt.Fprintf(r.cfg.Log, "gate-e2e: settle failed: %v\n", err)
					}
				} else {
					settles.Add(1)
					refunded.Add(ans.Refunded)
					for _, b := range ans.Budgets {
						if b.Outcome == "refunded" {
							end = b.WindowEnd
						} else if b.Outcome == "window-ended" || b.Outcome == "window-unknown" {
							late.Add(1)
						}
					}
					t.mu.Lock()
					t.lat = append(t.lat, took)
					t.mu.Unlock()
				}
			}
			if end == 0 {
				unplaced.Add(1)
				continue
			}
			t.mu.Lock()
			w := t.window(end)
			w.Items++
			w.Actual += used
			w.Estimated += SettleEstimate
			t.mu.Unlock()
		}
	}
}

// callTokens calls the fake vendor with the item's max_tokens and returns
// the usage it reports.
func callTokens(ctx context.Context, hc *http.Client, url string, data []byte) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, err
	}
	return out.Usage.TotalTokens, nil
}

// stampWindow is the window end the item's stamp names for its charge at
// the node (0 when unknown).
func stampWindow(data []byte) int64 {
	raw, ok := cost.StampOf(data)
	if !ok {
		return 0
	}
	st, err := cost.ParseStamp(raw)
	if err != nil {
		return 0
	}
	for _, c := range st.Charges {
		if c.Node == SettleNode && len(c.Windows) > 0 {
			return c.Windows[0]
		}
	}
	return 0
}

// sampleCounter reads the budget's counter every 100 ms and keeps each
// window's highest value.
func (r *runner) sampleCounter(ctx context.Context, key string, t *settleTally) {
	ns := r.cfg.KVNamespace
	for ctx.Err() == nil {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := r.q.KV(c, queen.KVGetMany(ns, key))
		cancel()
		if err == nil && !res.Refused() && len(res.Results) == 1 {
			for _, row := range res.Results[0].Rows {
				v, err := row.Int64()
				exp, terr := row.ExpiresAt.Time()
				if err != nil || terr != nil || exp.IsZero() {
					continue
				}
				t.mu.Lock()
				w := t.window(exp.UnixMilli())
				w.MaxCounter = max(w.MaxCounter, v)
				t.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeSettle is WriteText for the `vendor settle` scenario.
func writeSettle(w io.Writer, r Report) {
	sr := r.Settle
	fmt.Fprintf(w, "== gate-e2e vendor settle: %d tokens per %d s, estimated %d per call, used %d; settled %v (%d settles, %d tokens refunded, %d too late to refund, %d items in no sure window, %d failures, settle p99 %.1f ms)\n",
		sr.Count, sr.WindowS, SettleEstimate, SettleEstimate/SettleFactor, sr.Settled, sr.Settles, sr.Refunded, sr.Late, sr.Unplaced, sr.Fails, sr.P99Ms)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "window end\titems\testimated\tactual\tuse\tmax counter\tjudged\t")
	for _, x := range sr.Windows {
		j := "no"
		if x.Judged {
			j = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f%%\t%d\t%s\t\n", time.UnixMilli(x.End).UTC().Format("15:04:05.000"), x.Items, x.Estimated, x.Actual, 100*x.Use, x.MaxCounter, j)
	}
	tw.Flush()
}
