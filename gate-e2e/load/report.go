package load

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary is the --json document.
type Summary struct {
	Scenario Scenario `json:"scenario"`
	App      string   `json:"application"`
	Total    int      `json:"total"`
	Seconds  int      `json:"seconds"`
	Report
}

// WriteJSON writes the machine-readable summary.
func WriteJSON(w io.Writer, cfg Config, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Summary{Scenario: cfg.Scenario, App: cfg.App, Total: cfg.Total, Seconds: cfg.Seconds, Report: r})
}

// WriteText writes the human report: the declared ceiling, the figures, a
// per-second table and each gate with its numbers.
func WriteText(w io.Writer, cfg Config, r Report) {
	if r.Settle != nil {
		writeSettle(w, r)
		writeVerdict(w, r)
		return
	}
	if r.Vendor != nil {
		writeVendor(w, r)
		writeVerdict(w, r)
		return
	}
	p := r.Params
	fmt.Fprintf(w, "== gate-e2e %s: declared %d per %d s = %d/s, %d sub-windows of %d per %d ms (fast ceiling %d, bulk ceiling %d)\n",
		cfg.Scenario, p.Count, p.WindowS, p.Rate, p.WindowS, p.CountSub, p.TTLMs, p.FastCeiling, p.BulkCeiling)
	start := int64(0)
	if len(r.Rows) > 0 {
		start = r.Rows[0].AtMs
	}
	for _, e := range r.Events {
		fmt.Fprintf(w, "event: %s at t+%.1f s, disturbing until t+%.1f s (those seconds are not judged for throughput or reserve)\n",
			e.What, float64(e.AtMs-start)/1000, float64(e.UntilMs-start)/1000)
	}
	for _, line := range AdmissionSummary(r.Admission) {
		fmt.Fprintf(w, "admission: %s\n", line)
	}
	if r.ChargeInCommit {
		fmt.Fprintln(w, "admission rule: strict — every relay reported riders (the charge rides the settle), so a lost charge fails the ceiling even after a kill")
	} else {
		fmt.Fprintln(w, "admission rule: lenient — not every relay reported riders (separate, unknown or mixed), so a lost charge after a kill is excused as over-counting")
	}
	fmt.Fprintf(w, "pushed %d; ADMITTED p50 %.0f/s (judged seconds with a fast backlog), peak %d/s, total %d\n", r.PushedTotal, r.AdmittedP50, r.AdmittedPeak, r.AdmittedTotal)
	fmt.Fprintf(w, "drained p50 %.0f/s, peak %d/s, total %d, mean %.1f/s\n", r.DrainedP50, r.DrainedPeak, r.DrainedTotal, r.DrainedMean)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sec\tfast\tbulk\ttotal\tdrained\tcounter\tfast backlog\tbulk backlog\tbulk refused\trelay refusals\tjudged\t")
	for _, row := range r.Rows {
		ref := ""
		if row.BulkRefused {
			ref = "yes"
		}
		j := "yes"
		if !row.Judged {
			j = "no"
			if row.Excused != "" {
				j = row.Excused
			}
		}
		ctr := "-"
		if row.Counter >= 0 {
			ctr = fmt.Sprint(row.Counter)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%d\t%s\t\n", row.Second, row.Fast, row.Bulk, row.Total, row.Drained, ctr, row.FastBacklog, row.BulkBacklog, ref, row.RelayRefusals, j)
	}
	tw.Flush()
	fmt.Fprintf(w, "seconds bulk refused (while fast had work waiting) %d, of which fast still admitted %d\n", r.BulkRefusedSeconds, r.FastAdmittedWhileRefused)
	fmt.Fprintf(w, "worst %d s window: %d vs declared %d (%.1f%%); fixed sub-windows allow at most %d (%.0f%%), our gate is that bound (the reference allowed 125%%)\n",
		p.WindowS, r.WorstWindow, p.Count, 100*float64(r.WorstWindow)/float64(p.Count), r.SlidingBound, 100*float64(r.SlidingBound)/float64(p.Count))
	a := r.Accounting
	fmt.Fprintf(w, "sub-window accounting: %d windows seen, %d judged, %d exact, uncharged %d, lost %d, over ceiling %d\n", a.Windows, a.Judged, a.Exact, a.Uncharged, a.Lost, a.OverCeiling)
	writeVerdict(w, r)
}

// writeVerdict writes each gate with its numbers and the verdict.
func writeVerdict(w io.Writer, r Report) {
	for _, g := range r.Gates {
		fmt.Fprintf(w, "%-13s %-22s %s\n", "["+g.Status+"]", g.Name, g.Detail)
	}
	verdict := "PASS"
	if !r.Pass {
		var failed []string
		for _, g := range r.Gates {
			if !g.Pass {
				failed = append(failed, g.Name)
			}
		}
		verdict = "FAIL (" + strings.Join(failed, ", ") + ")"
	}
	fmt.Fprintf(w, "== %s at %s\n", verdict, time.Now().UTC().Format(time.RFC3339))
}
