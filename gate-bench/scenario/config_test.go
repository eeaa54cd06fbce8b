package scenario

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestParseReadsScenariosAndKnobs(t *testing.T) {
	t.Parallel()
	env := map[string]string{"BENCH_SECONDS": "4", "BENCH_CONC": "2, 16", "GATE_APP": "x", "BENCH_RECONCILE_SECONDS": "15", "BENCH_IDLE_SETTLE_SECONDS": "30"}
	cfg, err := Parse([]string{"--json", "out.json", "push,idle"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Scenarios, []string{"push", "idle"}) || cfg.JSONFile != "out.json" || cfg.App != "x" ||
		cfg.Seconds != 4*time.Second || !slices.Equal(cfg.Conc, []int{2, 16}) || cfg.Backlog != 30000 ||
		!slices.Equal(cfg.Batches, []int{1, 25, 200, 500}) || cfg.IdleSeconds != 60*time.Second ||
		cfg.ReconcilePeriod != 15*time.Second || cfg.IdleSettle != 30*time.Second {
		t.Fatalf("Parse = %+v", cfg)
	}
	all, err := Parse([]string{"all", "--embedded"}, func(string) string { return "" })
	if err != nil || !slices.Equal(all.Scenarios, Names) || !all.Embedded || all.ReconcilePeriod != 2*time.Second || all.IdleSettle != 5*time.Second {
		t.Fatalf("all = %+v, %v", all, err)
	}
}

func TestParseRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{nil, nil},
		{[]string{"push,nope"}, nil},
		{[]string{"push", "idle"}, nil},
		{[]string{"--json"}, nil},
		{[]string{"--fast", "all"}, nil},
		{[]string{"all"}, map[string]string{"BENCH_BACKLOG": "0"}},
		{[]string{"all"}, map[string]string{"BENCH_RECONCILE_SECONDS": "0"}},
		{[]string{"all"}, map[string]string{"BENCH_IDLE_SETTLE_SECONDS": "-3"}},
		{[]string{"all"}, map[string]string{"BENCH_CONC": "1,x"}},
		{[]string{"all"}, map[string]string{"BENCH_PAYLOAD_BYTES": "-1"}},
		{[]string{"all"}, map[string]string{"BENCH_PAYLOAD_BYTES": "65537"}},
		{[]string{"all"}, map[string]string{"BENCH_PAYLOAD_BYTES": "1k"}},
		{[]string{"scale"}, map[string]string{"BENCH_SCALE_GRAPHS": "20"}},
		{[]string{"scale"}, map[string]string{"BENCH_SCALE_GRAPHS": "1000,100"}},
	} {
		if _, err := Parse(tc.args, func(k string) string { return tc.env[k] }); !errors.Is(err, ErrUsage) {
			t.Errorf("Parse(%v, %v) = %v, want a usage error", tc.args, tc.env, err)
		}
	}
}

// scale runs only when named: all leaves it out, and its graph counts are
// read from BENCH_SCALE_GRAPHS.
func TestScaleRunsOnlyWhenNamed(t *testing.T) {
	t.Parallel()
	all, err := Parse([]string{"all"}, func(string) string { return "" })
	if err != nil || slices.Contains(all.Scenarios, "scale") {
		t.Fatalf("all = %v (%v), want every scenario but scale", all.Scenarios, err)
	}
	cfg, err := Parse([]string{"scale"}, func(k string) string { return map[string]string{"BENCH_SCALE_GRAPHS": "100,1000,10000"}[k] })
	if err != nil || !slices.Equal(cfg.Scenarios, []string{"scale"}) || !slices.Equal(cfg.ScaleGraphs, []int{100, 1000, 10000}) {
		t.Fatalf("scale with BENCH_SCALE_GRAPHS=100,1000,10000: %+v (%v)", cfg.ScaleGraphs, err)
	}
}

// A padded payload is one JSON object of about the asked size that keeps
// the sequence number, so the counting consumers still see distinct items.
func TestPaddedPayload(t *testing.T) {
	t.Parallel()
	if got := string(paddedPayload(0)(7)); got != `{"i":7}` {
		t.Fatalf("size 0 = %s, want the minimal payload", got)
	}
	for _, size := range []int{1, 64, 512, 4096} {
		p := paddedPayload(size)(123456)
		var v struct {
			I   int    `json:"i"`
			Pad string `json:"pad"`
		}
		if err := json.Unmarshal(p, &v); err != nil || v.I != 123456 {
			t.Fatalf("size %d: %s is not {\"i\":123456,…} (%v)", size, p, err)
		}
		if size >= 32 && len(p) != size {
			t.Errorf("size %d: payload is %d bytes", size, len(p))
		}
	}
}

func TestVerdictAndExactness(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate float64
		want string
	}{{12000, "TARGET"}, {3000, "above floor"}, {100, "BELOW FLOOR"}} {
		if got := verdict(tc.rate); got != tc.want {
			t.Errorf("verdict(%v) = %q, want %q", tc.rate, got, tc.want)
		}
	}
	if got := spanRate([]int64{1000, 1500, 2000}); got != 3 {
		t.Errorf("spanRate = %v, want 3 items over 1 s", got)
	}
}

func TestPeerVerdictsJudgeEachLimiterByItsOwnBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		ok     bool
		note   string
		wantOK bool
		want   string
	}{
		{"continuous within its burst", first(continuousVerdict(2200, 2000)), second(continuousVerdict(2200, 2000)), true, "yes (worst 1 s 2200 ≤ 2200)"},
		{"continuous doubled by two buckets", first(continuousVerdict(4000, 2000)), second(continuousVerdict(4000, 2000)), false, "no (worst 1 s 4000 = 200% of the ceiling)"},
		{"fixed windows exact", first(fixedVerdict(2000, 2000, 6, 10000, 22000)), second(fixedVerdict(2000, 2000, 6, 10000, 22000)), true,
			"yes (6 sub-windows, worst 2000 ≤ 2000; sliding 10 s 10000 ≤ 22000)"},
		{"a sub-window over its share", first(fixedVerdict(2001, 2000, 6, 10000, 22000)), second(fixedVerdict(2001, 2000, 6, 10000, 22000)), false,
			"no (worst sub-window 2001 of 2000, sliding 10 s 10000 of ≤ 22000)"},
		{"sliding 10 s over the (N+1)/N bound", first(fixedVerdict(2000, 2000, 12, 22001, 22000)), second(fixedVerdict(2000, 2000, 12, 22001, 22000)), false,
			"no (worst sub-window 2000 of 2000, sliding 10 s 22001 of ≤ 22000)"},
		{"no counter read is not a pass", first(fixedVerdict(0, 2000, 0, 10000, 22000)), second(fixedVerdict(0, 2000, 0, 10000, 22000)), false,
			"no (the kv counter was never read)"},
	} {
		if tc.ok != tc.wantOK || tc.note != tc.want {
			t.Errorf("%s: (%v, %q), want (%v, %q)", tc.name, tc.ok, tc.note, tc.wantOK, tc.want)
		}
	}
}

func first(ok bool, _ string) bool { return ok }

func second(_ bool, s string) string { return s }

func TestFullClaimsRoundsUpToWholeClaimsPerPartition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, parts, batch, want int }{
		{30000, 16, 200, 32000},
		{32000, 16, 200, 32000},
		{1, 16, 1, 16},
		{30000, 16, 500, 32000},
	} {
		if got := fullClaims(tc.n, tc.parts, tc.batch); got != tc.want {
			t.Errorf("fullClaims(%d, %d, %d) = %d, want %d", tc.n, tc.parts, tc.batch, got, tc.want)
		}
	}
}
