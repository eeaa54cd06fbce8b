package budget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// perKeyNode is a node with an unscoped budget and a scoped one of 10 per
// second (two paths: main with a full share, bulk with half), whose
// document gives "gold" 40 and "trial" 2.
func perKeyNode() *plan.Node {
	scoped := plan.BudgetKey("app", "g", "call", "acct")
	return &plan.Node{
		Name: "call", Cost: cost.Fixed(1), Shares: map[string]float64{"main": 1, "bulk": 0.5}, WidestShare: 1,
		Budgets: []plan.Budget{
			{ID: "global", Key: plan.BudgetKey("app", "g", "call", "global"), Count: 100, TimeMs: 1000, SubWindows: 1, CountSub: 100, WindowSubSeconds: 1,
				Ceilings: map[string]int64{"main": 100, "bulk": 50}},
			{ID: "acct", Key: scoped, ScopeBy: "payload.acct", Count: 10, TimeMs: 1000, SubWindows: 1, CountSub: 10, WindowSubSeconds: 1,
				Ceilings: map[string]int64{"main": 10, "bulk": 5}, Keys: map[string]int64{"gold": 40, "trial": 2}},
		},
	}
}

func keyRig(t testing.TB) (*budget.Limiter, *queen.Client, *clock.Virtual) {
	t.Helper()
	vc := clock.NewVirtual(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	mq := miniqueen.RunT(t, miniqueen.WithClock(vc))
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	return &budget.Limiter{KV: c, NS: meterNS, Keys: budget.NewKeyLimits(c, meterNS, vc, 0, 0)}, c, vc
}

// keyWindow is a batch of one item per value on the node's two budgets.
func keyWindow(n *plan.Node, values ...string) *budget.Batch {
	b := &budget.Batch{}
	for _, v := range values {
		g := b.Counter(n.Budgets[0].Key, n.Budgets[0].Ceilings["main"], 1, "global")
		s := b.Counter(plan.ScopedKey(n.Budgets[1].Key, v), n.Budgets[1].Ceilings["main"], 1, "acct")
		b.Add(1, []int{g, s})
	}
	return b
}

func ceilings(b *budget.Batch) map[string]int64 {
	out := map[string]int64{}
	for _, c := range b.Counters {
		out[c.Key[strings.LastIndex(c.Key, ":")+1:]] = c.Max
	}
	return out
}

func TestKeyCeilingsTakeTheRuntimeRowThenTheDocumentThenTheBudget(t *testing.T) {
	t.Parallel()
	l, c, vc := keyRig(t)
	ctx := context.Background()
	n := perKeyNode()
	if _, err := budget.PutKeyLimit(ctx, c, meterNS, &n.Budgets[1], "trial", 7, vc.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := budget.PutKeyLimit(ctx, c, meterNS, &n.Budgets[1], "vip", 1000, vc.Now()); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]map[string]int64{
		"main": {"global": 100, "gold": 40, "trial": 7, "vip": 1000, "anyone": 10},
		"bulk": {"global": 100, "gold": 20, "trial": 4, "vip": 500, "anyone": 5},
	} {
		b := keyWindow(n, "gold", "trial", "vip", "anyone")
		if err := l.KeyCeilings(ctx, n, path, b); err != nil {
			t.Fatal(err)
		}
		got := ceilings(b)
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: ceiling of %s is %d, want %d (all: %v)", path, k, got[k], w, got)
			}
		}
	}
}

// A value that fits its counter key but has no room for a row key is never
// asked for (the broker would refuse the whole read): it counts the
// budget's, and the values beside it still get their rows.
func TestAValueWithoutRoomForARowCountsTheBudgetsAndSpoilsNoRead(t *testing.T) {
	t.Parallel()
	l, c, vc := keyRig(t)
	n := perKeyNode()
	bd := &n.Budgets[1]
	if _, err := budget.PutKeyLimit(t.Context(), c, meterNS, bd, "trial", 7, vc.Now()); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", plan.ScopeRoom(bd.Key))
	b := keyWindow(n, "trial", long)
	if err := l.KeyCeilings(t.Context(), n, "main", b); err != nil {
		t.Fatalf("a value past the row room spoiled the read: %v", err)
	}
	if got := ceilings(b); got["trial"] != 7 || got[long] != 10 {
		t.Fatalf("ceilings %v, want trial's row 7 and the long value at the budget's 10", got)
	}
}

// Another relay's cache sees a change once its copy is KeyRefresh old —
// within one sub-window — and a deleted row falls back to the document.
func TestAKeyLimitChangeReachesEveryRelayWithinASecond(t *testing.T) {
	t.Parallel()
	l, c, vc := keyRig(t)
	ctx := context.Background()
	n := perKeyNode()
	at := func() int64 {
		b := keyWindow(n, "gold")
		if err := l.KeyCeilings(ctx, n, "main", b); err != nil {
			t.Fatal(err)
		}
		return ceilings(b)["gold"]
	}
	if got := at(); got != 40 {
		t.Fatalf("before any row gold's ceiling is %d, want the document's 40", got)
	}
	if _, err := budget.PutKeyLimit(ctx, c, meterNS, &n.Budgets[1], "gold", 60, vc.Now()); err != nil {
		t.Fatal(err)
	}
	vc.Advance(budget.KeyRefresh / 2)
	if got := at(); got != 40 {
		t.Fatalf("half a refresh later the cached 40 stands, got %d", got)
	}
	vc.Advance(budget.KeyRefresh / 2)
	if got := at(); got != 60 {
		t.Fatalf("a refresh after the write the ceiling is %d, want 60", got)
	}
	if _, err := budget.DeleteKeyLimit(ctx, c, meterNS, &n.Budgets[1], "gold"); err != nil {
		t.Fatal(err)
	}
	vc.Advance(budget.KeyRefresh)
	if got := at(); got != 40 {
		t.Fatalf("after the delete the ceiling is %d, want the document's 40 back", got)
	}
	if r := l.Keys.Reads(); r != 3 {
		t.Errorf("%d reads, want 3 (one per refresh that found the copy stale)", r)
	}
}

func TestTheKeyLimitCacheIsBounded(t *testing.T) {
	t.Parallel()
	vc := clock.NewVirtual(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	mq := miniqueen.RunT(t, miniqueen.WithClock(vc))
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	n := perKeyNode()
	k := budget.NewKeyLimits(c, meterNS, vc, 0, 50)
	l := &budget.Limiter{KV: c, NS: meterNS, Keys: k}
	if _, err := budget.PutKeyLimit(t.Context(), c, meterNS, &n.Budgets[1], "v7", 3, vc.Now()); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		vals := make([]string, 40)
		for i := range vals {
			vals[i] = "v" + strconv.Itoa(round*40+i)
		}
		b := keyWindow(n, vals...)
		if err := l.KeyCeilings(t.Context(), n, "main", b); err != nil {
			t.Fatal(err)
		}
		if round == 0 && ceilings(b)["v7"] != 3 {
			t.Fatalf("v7's ceiling %d, want its row's 3", ceilings(b)["v7"])
		}
	}
	if r := k.Reads(); r != 10 {
		t.Errorf("%d reads for 10 windows of 40 new values, want 10 (one getMany each)", r)
	}
	// 400 values seen, 50 remembered: v7 is read again and still right.
	b := keyWindow(n, "v7")
	if err := l.KeyCeilings(t.Context(), n, "main", b); err != nil || ceilings(b)["v7"] != 3 {
		t.Fatalf("v7 after eviction: %v %v", ceilings(b), err)
	}
}

func TestKeyLimitsPageWithNextAfter(t *testing.T) {
	t.Parallel()
	_, c, vc := keyRig(t)
	ctx := context.Background()
	b := &perKeyNode().Budgets[1]
	const total = 2500
	for start := 0; start < total; start += 250 {
		ops := make([]queen.KVOp, 0, 250)
		for i := start; i < start+250; i++ {
			raw, _ := json.Marshal(budget.KeyRow{Count: int64(i + 1), At: vc.Now().UnixMilli()})
			ops = append(ops, queen.KVPut(meterNS, plan.KeyLimitKey(b.Key, fmt.Sprintf("acct-%05d", i)), raw, queen.PutOpts{Forever: true}))
		}
		if _, err := c.KV(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	// A row of another budget whose key starts alike is not listed.
	other := *b
	other.Key += "x"
	if _, err := budget.PutKeyLimit(ctx, c, meterNS, &other, "zzz", 1, vc.Now()); err != nil {
		t.Fatal(err)
	}
	var all []budget.KeyLimit
	after, pages := "", 0
	for {
		page, next, err := budget.ListKeyLimits(ctx, c, meterNS, b, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, page...)
		if next == "" {
			break
		}
		after = next
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if len(all) != total || pages != 3 {
		t.Fatalf("listed %d rows in %d pages, want %d in 3", len(all), pages, total)
	}
	for i, kl := range all {
		if kl.Value != fmt.Sprintf("acct-%05d", i) || kl.Row.Count != int64(i+1) {
			t.Fatalf("row %d is %+v", i, kl)
		}
	}
	row, ok, err := budget.GetKeyLimit(ctx, c, meterNS, b, "acct-00041")
	if err != nil || !ok || row.Count != 42 {
		t.Fatalf("get: %+v %v %v", row, ok, err)
	}
}

func TestValidateKeyLimitNamesTheField(t *testing.T) {
	t.Parallel()
	n := perKeyNode()
	n.Cost = cost.Rule{Path: "payload.tokens", Default: 1, Max: 3}
	for _, tc := range []struct {
		budget      int
		value       string
		count       int64
		field, word string
	}{
		{0, "x", 5, "budget", "no scopeBy"},
		{1, "", 5, "value", "empty"},
		{1, strings.Repeat("v", plan.KeyLimitRoom(n.Budgets[1].Key)+1), 5, "value", "bytes"},
		{1, "x", 0, "count", "outside"},
		{1, "x", -3, "count", "outside"},
		{1, "x", plan.MaxKeyCount + 1, "count", "outside"},
		{1, "x", 2, "count", "largest item cost 3"},
		{1, strings.Repeat("v", plan.KeyLimitRoom(n.Budgets[1].Key)), 3, "", ""},
	} {
		field, why := budget.ValidateKeyLimit(n, &n.Budgets[tc.budget], tc.value, tc.count)
		if field != tc.field || !strings.Contains(why, tc.word) {
			t.Errorf("%d %.10q %d: %q %q, want %q naming %q", tc.budget, tc.value, tc.count, field, why, tc.field, tc.word)
		}
	}
}

// BenchmarkKeyCeilings is the relay's per-claim key limit lookup for a
// window of 200 scope values that have no runtime row, with rows other
// values hold in kv: cached (the steady state between refreshes) and stale
// (each claim reads all 200 in one getMany, the worst case).
func BenchmarkKeyCeilings(b *testing.B) {
	for _, rows := range []int{1, 100, 10_000, 100_000} {
		vc := clock.NewVirtual(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
		mq := miniqueen.RunT(b, miniqueen.WithClock(vc))
		c, err := queen.New(mq.URL())
		if err != nil {
			b.Fatal(err)
		}
		n := perKeyNode()
		bd := &n.Budgets[1]
		raw, _ := json.Marshal(budget.KeyRow{Count: 50, At: 1})
		for start := 0; start < rows; start += 256 {
			ops := make([]queen.KVOp, 0, 256)
			for i := start; i < min(start+256, rows); i++ {
				ops = append(ops, queen.KVPut(meterNS, plan.KeyLimitKey(bd.Key, "tier-"+strconv.Itoa(i)), raw, queen.PutOpts{Forever: true}))
			}
			if _, err := c.KV(context.Background(), ops...); err != nil {
				b.Fatal(err)
			}
		}
		vals := make([]string, 200)
		for i := range vals {
			vals[i] = "plain-" + strconv.Itoa(i)
		}
		for _, mode := range []string{"cached", "stale"} {
			b.Run(fmt.Sprintf("rows=%d/%s", rows, mode), func(b *testing.B) {
				// Stale copies expire every microsecond, and the clock moves by
				// one per claim: miniqueen sweeps its expired keys (all of
				// them, a fake's shortcut) once per clock second, which a
				// second per claim would measure instead of the lookup.
				every := time.Duration(0)
				if mode == "stale" {
					every = time.Microsecond
				}
				l := &budget.Limiter{KV: c, NS: meterNS, Keys: budget.NewKeyLimits(c, meterNS, vc, every, 0)}
				win := keyWindow(n, vals...)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if mode == "stale" {
						vc.Advance(time.Microsecond)
					}
					if err := l.KeyCeilings(context.Background(), n, "main", win); err != nil {
						b.Fatal(err)
					}
				}
				if win.Counters[1].Max != 10 {
					b.Fatalf("a value without a row has ceiling %d, want 10", win.Counters[1].Max)
				}
			})
		}
	}
}

// FuzzValidateKeyLimit: whatever a caller sends as a value and a count, a
// limit ValidateKeyLimit accepts has a row key and a counter key the broker
// takes, a count in range and a sub-window count that fits the largest
// item; one it refuses names value or count.
func FuzzValidateKeyLimit(f *testing.F) {
	f.Add("acct-42", int64(500))
	f.Add("", int64(5))
	f.Add(strings.Repeat("v", 480), int64(1))
	f.Add("x", int64(-1))
	f.Add("ü/é", int64(plan.MaxKeyCount))
	n := perKeyNode()
	n.Cost = cost.Rule{Path: "payload.tokens", Default: 1, Max: 3}
	b := &n.Budgets[1]
	f.Fuzz(func(t *testing.T, value string, count int64) {
		field, why := budget.ValidateKeyLimit(n, b, value, count)
		if field == "" {
			if len(plan.KeyLimitKey(b.Key, value)) > plan.MaxKVKeyBytes || len(plan.ScopedKey(b.Key, value)) > plan.MaxKVKeyBytes {
				t.Fatalf("accepted %q whose keys pass the broker's limit", value)
			}
			if count < 3 || count > plan.MaxKeyCount || value == "" {
				t.Fatalf("accepted %q with count %d", value, count)
			}
			return
		}
		if (field != "value" && field != "count") || why == "" {
			t.Fatalf("refused with field %q: %q", field, why)
		}
	})
}
