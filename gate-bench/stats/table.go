package stats

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Table is one scenario's output: a title, aligned rows and notes.
type Table struct {
	Scenario string     `json:"scenario"`
	Title    string     `json:"title"`
	Header   []string   `json:"header"`
	Rows     [][]string `json:"rows"`
	Notes    []string   `json:"notes,omitempty"`
	// Figures are the table's key numbers by name, for --json readers.
	Figures map[string]float64 `json:"figures,omitempty"`
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Note appends a note line.
func (t *Table) Note(format string, a ...any) { t.Notes = append(t.Notes, fmt.Sprintf(format, a...)) }

// Figure records a key number.
func (t *Table) Figure(name string, v float64) {
	if t.Figures == nil {
		t.Figures = map[string]float64{}
	}
	t.Figures[name] = v
}

// Write prints the table aligned, then its notes.
func (t *Table) Write(w io.Writer) {
	fmt.Fprintf(w, "\n== %s\n", t.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(t.Header, "\t")+"\t")
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	tw.Flush()
	for _, n := range t.Notes {
		fmt.Fprintf(w, "   %s\n", n)
	}
}

// Ms renders a duration in milliseconds with two decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// Num renders a rate or count without decimals.
func Num(v float64) string { return fmt.Sprintf("%.0f", v) }

// Statuses renders "200×n 429×m" in status order.
func Statuses(m map[int]int) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := fmt.Sprint(k)
		if k == 0 {
			name = "err"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, m[k]))
	}
	return strings.Join(parts, " ")
}

// LatencyHeader is the header of a latency row.
var LatencyHeader = []string{"row", "req/s", "units/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "statuses"}

// LatencyRow renders a Result as a latency row.
func LatencyRow(r Result) []string {
	return []string{r.Label, Num(r.ReqPerSec()), Num(r.UnitsPerSec()), Ms(r.Latency.P50), Ms(r.Latency.P90),
		Ms(r.Latency.P99), Ms(r.Latency.P999), Ms(r.Latency.Max), Statuses(r.Statuses)}
}
