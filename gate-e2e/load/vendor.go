package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// The vendor scenario: a fake vendor (in process) with fixed one-second
// windows whose real limit is below the declared one and changes mid-run,
// and four workers that pop the egress, call it and report each answer to
// …/observe. Gates: vendor 429s ≤ 5% of calls; ≥ 85% of the vendor's real
// limit used in every phase (after VendorFollowSeconds to follow it);
// never more calls in a vendor second than declared.

// Names of the vendor graph.
const (
	NodeCall       = "call"
	PathMain       = "main"
	VendorBudget   = "vendor"
	VendorGroup    = "vendor-workers"
	VendorWorkers  = 4
	VendorPartitns = 4
	// VendorFollowSeconds is how long a phase may take to follow the
	// vendor before its utilisation is judged.
	VendorFollowSeconds = 3
	// VendorMaxRefused is the largest share of calls the vendor may refuse.
	VendorMaxRefused = 0.05
	// VendorMinUse is the smallest share of the vendor's real limit each
	// phase must use.
	VendorMinUse = 0.85
)

// DefaultVendorLimits are the vendor's real limits per second, one per
// phase (GATE_E2E_VENDOR_LIMITS).
var DefaultVendorLimits = []int{20, 10}

// VendorDocument is the vendor graph: one node with a Gate-owned ingress,
// budget "vendor" of rate per second mirroring the vendor's X-RateLimit
// meter, an egress the workers pop.
func VendorDocument(app, graph string, rate int) map[string]any {
	return workerGraph(app, graph, NodeCall, map[string]any{
		"id": VendorBudget, "count": rate, "timeMs": 1000,
		"vendorMeter": map[string]any{"headers": "x-ratelimit"},
	}, nil)
}

// VendorRow is one second of the fake vendor's window.
type VendorRow struct {
	Second  int  `json:"second"`
	Phase   int  `json:"phase"`
	Limit   int  `json:"limit"`
	Calls   int  `json:"calls"`
	OK      int  `json:"ok"`
	Refused int  `json:"refused"`
	Judged  bool `json:"judged"`
}

// VendorPhase is one phase's figures.
type VendorPhase struct {
	Limit       int     `json:"limit"`
	Seconds     int     `json:"seconds"`
	Judged      int     `json:"judged"`
	OK          int     `json:"ok"`
	Refused     int     `json:"refused"`
	Utilisation float64 `json:"utilisation"`
}

// VendorReport is the vendor scenario's report.
type VendorReport struct {
	Declared     int           `json:"declared"`
	Observe      bool          `json:"observe"`
	Phases       []VendorPhase `json:"phases"`
	Rows         []VendorRow   `json:"rows"`
	Calls        int           `json:"calls"`
	Refused      int           `json:"refused"`
	RefusedShare float64       `json:"refusedShare"`
	MaxPerSecond int           `json:"maxPerSecond"`
	Observed     int64         `json:"observed"`
	ObserveFails int64         `json:"observeFailures"`
}

// fakeVendor answers like a real rate-limited API with fixed one-second
// windows: 200 with X-RateLimit-Limit/-Remaining/-Reset (reset in epoch
// seconds) while the window has room, else 429 with Retry-After.
type fakeVendor struct {
	start    int64 // epoch second the first phase starts
	phaseLen int64
	limits   []int

	mu   sync.Mutex
	sec  int64
	used int
	rows map[int64]*VendorRow
}

func (v *fakeVendor) phase(sec int64) int {
	return min(max(int((sec-v.start)/v.phaseLen), 0), len(v.limits)-1)
}

func (v *fakeVendor) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	sec := now.Unix()
	v.mu.Lock()
	if sec != v.sec {
		v.sec, v.used = sec, 0
	}
	ph := v.phase(sec)
	limit := v.limits[ph]
	row := v.rows[sec]
	if row == nil {
		row = &VendorRow{Second: int(sec - v.start), Phase: ph, Limit: limit}
		v.rows[sec] = row
	}
	row.Calls++
	ok := v.used < limit
	if ok {
		v.used++
		row.OK++
	} else {
		row.Refused++
	}
	remaining := limit - v.used
	v.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(sec+1, 10))
	if !ok {
		h.Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":"rate limited"}`)
		return
	}
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// vendor runs the vendor scenario.
func (r *runner) vendor(ctx context.Context) (Report, error) {
	cfg := r.cfg
	decl, cleanup, err := r.declare(ctx, func(graph string) map[string]any { return VendorDocument(cfg.App, graph, cfg.Rate) })
	if err != nil {
		return Report{}, err
	}
	defer cleanup()
	n, ok := decl.Resolved.Node(NodeCall)
	if !ok {
		return Report{}, fmt.Errorf("%w: the declare answer has no node %q", ErrSetup, NodeCall)
	}
	ingress, egress := wire.Str(n.IngressQueue), wire.Str(n.EgressQueue)
	if err := r.waitStages(ctx, NodeCall, 1); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}

	phases := int64(cfg.Seconds)
	total := cfg.Rate * int(phases) * len(cfg.VendorLimits) * 11 / 10
	fmt.Fprintf(cfg.Log, "gate-e2e: vendor on %s/%s: declared %d/s, the vendor allows %v per second for %d s each; observe %v; queueing %d items\n",
		cfg.App, r.graph, cfg.Rate, cfg.VendorLimits, phases, cfg.VendorObserve, total)

	// The first phase starts at the next whole second, so phases are whole
	// vendor windows.
	startSec := time.Now().Unix() + 1
	fv := &fakeVendor{start: startSec, phaseLen: phases, limits: cfg.VendorLimits, rows: map[int64]*VendorRow{}}
	vendorURL, stopVendor, err := serveVendor(fv, "/v1/call")
	if err != nil {
		return Report{}, err
	}
	defer stopVendor()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var observed, fails atomic.Int64
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 5 * time.Second}
	// The workers wait on the empty egress; the backlog is queued when the
	// first phase starts, so nothing Gate forwards waits for a worker.
	for range VendorWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.vendorWorker(runCtx, hc, egress, vendorURL, &observed, &fails)
		}()
	}
	time.Sleep(time.Until(time.Unix(startSec, 0)))
	if err := r.fillBacklog(ctx, ingress, total, func(i int) map[string]any {
		return map[string]any{"id": r.runID + "-" + strconv.Itoa(i)}
	}); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	end := time.Unix(startSec+phases*int64(len(cfg.VendorLimits)), 0)
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(end)):
	}
	stop()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("interrupted: %w", err)
	}
	fv.mu.Lock()
	rows := make([]VendorRow, 0, len(fv.rows))
	for s := startSec; s < end.Unix(); s++ {
		row := VendorRow{Second: int(s - startSec), Phase: fv.phase(s), Limit: cfg.VendorLimits[fv.phase(s)]}
		if got := fv.rows[s]; got != nil {
			row = *got
		}
		rows = append(rows, row)
	}
	fv.mu.Unlock()
	vr := JudgeVendor(rows, cfg.Rate, int(phases), cfg.VendorLimits)
	vr.Observe, vr.Observed, vr.ObserveFails = cfg.VendorObserve, observed.Load(), fails.Load()
	rep := Report{Graph: r.graph, Vendor: &vr}
	rep.Gates = vendorGates(vr)
	rep.Pass = allPass(rep.Gates)
	return rep, nil
}

// fillBacklog queues n items on the ingress straight through the broker,
// spread over the VendorPartitns partitions in pushes of 500, so the
// ingress never runs dry during the run. Item i's payload is payload(i).
func (r *runner) fillBacklog(ctx context.Context, queue string, n int, payload func(i int) map[string]any) error {
	const chunk = 500
	for i := 0; i < n; i += chunk {
		items := make([]queen.PushItem, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			body, err := json.Marshal(payload(j))
			if err != nil {
				return fmt.Errorf("encoding backlog item %d for %s: %w", j, queue, err)
			}
			items = append(items, queen.PushItem{Queue: queue, Partition: "p" + strconv.Itoa(j%VendorPartitns), Payload: body})
		}
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := r.q.Push(c, items)
		cancel()
		if err != nil {
			return fmt.Errorf("queueing the backlog on %s: %w", queue, err)
		}
	}
	return nil
}

// serveVendor serves a fake vendor on a free loopback port until the
// returned stop is called; url is its address with path appended.
func serveVendor(h http.Handler, path string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("%w: the fake vendor: %w", ErrSetup, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + path, func() { _ = srv.Close() }, nil
}

// popWork is a vendor worker's pop: up to batch messages of the egress
// for VendorGroup, auto-acknowledged, waiting up to half a second for
// them. It returns none when there are none, or after a short pause when
// the pop failed while ctx is live.
func (r *runner) popWork(ctx context.Context, egress string, batch int) []queen.Message {
	claim, err := r.q.Pop(ctx, queen.PopRequest{
		Queue: egress, ConsumerGroup: VendorGroup, SubscriptionMode: queen.SubscribeAll,
		Batch: batch, Wait: true, Timeout: 500 * time.Millisecond, AutoAck: true,
	})
	if err != nil {
		if ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
	if claim.Empty() {
		return nil
	}
	return claim.Messages
}

// vendorWorker is a user's worker: pop one item, call the vendor, report
// its answer to observe (unless disabled), ack.
func (r *runner) vendorWorker(ctx context.Context, hc *http.Client, egress, vendorURL string, observed, fails *atomic.Int64) {
	for ctx.Err() == nil {
		for range r.popWork(ctx, egress, 1) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, vendorURL, nil)
			resp, err := hc.Do(req)
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if !r.cfg.VendorObserve {
				continue
			}
			headers := make(map[string]string, len(resp.Header))
			for name, vs := range resp.Header {
				headers[name] = strings.Join(vs, ", ")
			}
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = r.api.Observe(c, r.cfg.App, r.graph, NodeCall, wire.ObserveBody{Status: resp.StatusCode, Headers: headers})
			cancel()
			if err != nil {
				if fails.Add(1) <= 3 {
					fmt.Fprintf(r.cfg.Log, "gate-e2e: observe (vendor answered %d) failed: %v\n", resp.StatusCode, err)
				}
				continue
			}
			observed.Add(1)
		}
	}
}

// waitStages polls the view until the graph runs with want stages at node.
func (r *runner) waitStages(ctx context.Context, node string, want int) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := r.api.View(c, r.cfg.App, r.graph)
		cancel()
		if err == nil && v.Running && len(v.StagesAt(node)) == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("graph %s/%s not running with %d %s stage(s) within 60 s", r.cfg.App, r.graph, want, node)
}

// JudgeVendor computes the vendor report from the vendor's per-second
// rows: each phase is judged after its first VendorFollowSeconds.
func JudgeVendor(rows []VendorRow, declared, phaseSeconds int, limits []int) VendorReport {
	vr := VendorReport{Declared: declared, Phases: make([]VendorPhase, len(limits))}
	for i, l := range limits {
		vr.Phases[i] = VendorPhase{Limit: l, Seconds: phaseSeconds}
	}
	for i := range rows {
		row := &rows[i]
		p := &vr.Phases[row.Phase]
		row.Judged = row.Second-row.Phase*phaseSeconds >= VendorFollowSeconds
		vr.Calls += row.Calls
		vr.Refused += row.Refused
		vr.MaxPerSecond = max(vr.MaxPerSecond, row.Calls)
		p.Refused += row.Refused
		if row.Judged {
			p.Judged++
			p.OK += row.OK
		}
	}
	for i := range vr.Phases {
		p := &vr.Phases[i]
		if p.Judged > 0 && p.Limit > 0 {
			p.Utilisation = float64(p.OK) / float64(p.Judged*p.Limit)
		}
	}
	if vr.Calls > 0 {
		vr.RefusedShare = float64(vr.Refused) / float64(vr.Calls)
	}
	vr.Rows = rows
	return vr
}

func vendorGates(vr VendorReport) []Gate {
	gs := []Gate{gate("vendor 429s", vr.Calls > 0 && vr.RefusedShare <= VendorMaxRefused,
		fmt.Sprintf("%d of %d calls refused (%.1f%%), at most %.0f%%", vr.Refused, vr.Calls, 100*vr.RefusedShare, 100*VendorMaxRefused))}
	for i, p := range vr.Phases {
		gs = append(gs, gate(fmt.Sprintf("phase %d used", i+1), p.Judged > 0 && p.Utilisation >= VendorMinUse,
			fmt.Sprintf("%d of %d allowed in %d judged seconds at %d/s (%.0f%%), at least %.0f%%", p.OK, p.Judged*p.Limit, p.Judged, p.Limit, 100*p.Utilisation, 100*VendorMinUse)))
	}
	gs = append(gs, gate("never above declared", vr.MaxPerSecond <= vr.Declared,
		fmt.Sprintf("at most %d calls in a vendor second, declared %d", vr.MaxPerSecond, vr.Declared)))
	return gs
}

// writeVendor is WriteText for the vendor scenario.
func writeVendor(w io.Writer, r Report) {
	vr := r.Vendor
	fmt.Fprintf(w, "== gate-e2e vendor: declared %d/s; the vendor allows %s per second; observe %v (%d reported, %d failed)\n",
		vr.Declared, limitsText(vr.Phases), vr.Observe, vr.Observed, vr.ObserveFails)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sec\tphase\tlimit\tcalls\tok\t429\tjudged\t")
	for _, row := range vr.Rows {
		j := "no"
		if row.Judged {
			j = "yes"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", row.Second, row.Phase+1, row.Limit, row.Calls, row.OK, row.Refused, j)
	}
	tw.Flush()
	for i, p := range vr.Phases {
		fmt.Fprintf(w, "phase %d: vendor %d/s, %d 429s, %.0f%% of the vendor's limit used in %d judged seconds\n", i+1, p.Limit, p.Refused, 100*p.Utilisation, p.Judged)
	}
	fmt.Fprintf(w, "calls %d, 429s %d (%.1f%%), most calls in a vendor second %d\n", vr.Calls, vr.Refused, 100*vr.RefusedShare, vr.MaxPerSecond)
}

func limitsText(ps []VendorPhase) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.Itoa(p.Limit)
	}
	return strings.Join(parts, " then ")
}
