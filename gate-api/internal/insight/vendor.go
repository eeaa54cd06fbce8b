package insight

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/simulate"
	"github.com/queen-mq/gate/libs/wire"
)

// vendorSpans is the timeline's list of the limits vendors stated for the
// graph's mirrored budgets in [since, until).
// A span still holding at now says so in the present tense, with when it
// lapses unless the vendor restates it.
func vendorSpans(ctx context.Context, db *history.DB, e *plane.Entry, node string, since, until, now int64) ([]wire.VendorSpan, error) {
	rows, err := db.VendorSpans(ctx, e.App, e.Graph, node, since, until)
	if err != nil {
		return nil, err
	}
	out := make([]wire.VendorSpan, 0, len(rows))
	for _, s := range rows {
		sentence := s.Sentence()
		if s.End() > now {
			sentence = fmt.Sprintf("the vendor enforces %d where %d is declared, since %s (until %s unless it says so again)", s.Limit, s.Declared,
				time.UnixMilli(s.Since).UTC().Format(time.RFC3339), time.UnixMilli(s.End()).UTC().Format(time.RFC3339))
		}
		out = append(out, wire.VendorSpan{Node: s.Node, Budget: s.Budget, Since: s.Since, Until: s.End(), Ended: s.End() < s.Until,
			Limit: s.Limit, Declared: s.Declared, TimeMs: s.TimeMs, Headers: s.Headers, Sentence: sentence})
	}
	return out, nil
}

// meterPlan is the plan whose budgets carry e's vendor meters: e's own,
// or for a graph in Watch (whose plan charges no budget) the plan it
// compiles to as if it enforced (plan.Enforcing), whose meters observe
// follows during the Watch.
func meterPlan(e *plane.Entry) *plan.Plan {
	if e.Plan.Watching && e.Doc != nil {
		return plan.Enforcing(e.Doc, plan.Options{})
	}
	return e.Plan
}

// mirroredIDs are the ids of n's budgets that mirror a vendor meter (for
// a graph in Watch, the budgets it declares: plan.Enforcing).
func mirroredIDs(e *plane.Entry, n *plan.Node) []string {
	if vn := meterPlan(e).Node(n.Name); vn != nil {
		n = vn
	}
	var ids []string
	for i := range n.Budgets {
		if n.Budgets[i].VendorMeter != nil {
			ids = append(ids, n.Budgets[i].ID)
		}
	}
	return ids
}

// previewWithVendor is "Try a limit"'s replay: Preview, and for a node
// that mirrors a vendor meter the candidate (count per timeMs) compared
// second by second with the limits the vendor stated in [start, end).
func previewWithVendor(ctx context.Context, db *history.DB, e *plane.Entry, n *plan.Node, secs []simulate.Second, start, end int64, a simulate.Allowance, count, timeMs int64) (simulate.PreviewResult, *wire.VendorComparison, error) {
	ids := mirroredIDs(e, n)
	if len(ids) == 0 {
		return simulate.Preview(secs, start, end, a), nil, nil
	}
	spans, err := vendorSpans(ctx, db, e, n.Name, start, end, end)
	if err != nil {
		return simulate.PreviewResult{}, nil, err
	}
	limits := make([]simulate.VendorLimit, 0, len(spans))
	for _, s := range spans {
		limits = append(limits, simulate.VendorLimit{From: s.Since, To: s.Until, Limit: s.Limit, TimeMs: s.TimeMs})
	}
	r, v := simulate.VendorCompare(secs, start, end, a, count, timeMs, limits)
	out := &wire.VendorComparison{Budgets: ids, Seconds: v.Seconds, ExceededSeconds: v.ExceededSeconds,
		OverSeconds: v.OverSeconds, OverItems: v.Over, Spans: spans}
	if v.LowestTimeMs > 0 {
		out.LowestLimit, out.LowestTimeMs = &v.Lowest, &v.LowestTimeMs
	}
	out.Sentence = vendorSentence(v, count, timeMs, (end-start)/1000)
	return r, out, nil
}

// vendorSentence says the comparison in words.
func vendorSentence(v simulate.VendorResult, count, timeMs, seconds int64) string {
	if v.Seconds == 0 {
		return fmt.Sprintf("the vendor stated no limit below what is declared in these %d s: nothing to check %d per %s against", seconds, count, window(timeMs))
	}
	s := fmt.Sprintf("the vendor enforced less than declared for %d of these %d s (as low as %d per %s); ", v.Seconds, seconds, v.Lowest, window(v.LowestTimeMs))
	switch {
	case v.ExceededSeconds == 0:
		s += fmt.Sprintf("%d per %s stays within it throughout", count, window(timeMs))
	case v.OverSeconds == 0:
		s += fmt.Sprintf("%d per %s is above it for %d s, but the recorded traffic never came faster than the vendor allowed", count, window(timeMs), v.ExceededSeconds)
	default:
		s += fmt.Sprintf("%d per %s is above it for %d s, and the recorded traffic would have gone faster than the vendor allowed in %d s (%d calls over its limit)", count, window(timeMs), v.ExceededSeconds, v.OverSeconds, v.Over)
	}
	return s
}

// window says a window in words: "1 s", "1 min", "1500 ms".
func window(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms%3_600_000 == 0:
		return fmt.Sprintf("%d h", ms/3_600_000)
	case ms%60_000 == 0:
		return fmt.Sprintf("%d min", ms/60_000)
	case ms%1000 == 0:
		return fmt.Sprintf("%d s", ms/1000)
	}
	return d.String()
}
