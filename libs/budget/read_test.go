package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// answerKV answers every call with res (or err) and records the ops.
type answerKV struct {
	res   queen.KVResponse
	err   error
	calls [][]queen.KVOp
}

func (a *answerKV) KV(_ context.Context, ops ...queen.KVOp) (queen.KVResponse, error) {
	a.calls = append(a.calls, ops)
	return a.res, a.err
}

func TestReadCountersReadsValueAndWindowEndOfEveryKeyInOneGetMany(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 8, 21, 8, 0, 1, 250_000_000, time.UTC)
	kv := &answerKV{res: queen.KVResponse{Results: []queen.KVResult{{Op: queen.OpGetMany,
		Rows: []queen.KVRow{
			{Key: "live", Value: json.RawMessage("37"), ExpiresAt: queen.Timestamp(end.Format(time.RFC3339Nano))},
			{Key: "forever", Value: json.RawMessage("5")},
			{Key: "breaker", Value: json.RawMessage(`{"at":1,"retryAfterSeconds":4}`), ExpiresAt: queen.Timestamp(end.Format(time.RFC3339Nano))},
		},
		Missing: []string{"gone"},
	}}}}
	got, err := budget.ReadCounters(context.Background(), kv, "gate", []string{"live", "forever", "live", "breaker", "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kv.calls) != 1 || len(kv.calls[0]) != 1 {
		t.Fatalf("sent %+v, want one call of one getMany", kv.calls)
	}
	op := kv.calls[0][0]
	if op.Op != queen.OpGetMany || op.NS != "gate" || len(op.Keys) != 4 {
		t.Fatalf("sent %+v, want a getMany of the 4 distinct keys in namespace gate", op)
	}
	if r := got["live"]; r.Value != 37 || !r.Found || !r.ExpiresAt.Equal(end) {
		t.Errorf("live = %+v, want 37 ending at %s", r, end)
	}
	if r := got["forever"]; r.Value != 5 || !r.Found || !r.ExpiresAt.IsZero() {
		t.Errorf("forever = %+v, want 5 with no window end", r)
	}
	// A key that holds something other than a number (a breaker record read
	// in the same call) exists, with value 0 and its row's expiry.
	if r := got["breaker"]; r.Value != 0 || !r.Found || !r.NotANumber || !r.ExpiresAt.Equal(end) {
		t.Errorf("breaker = %+v, want found, not a number, value 0, ending at %s", r, end)
	}
	if got["live"].NotANumber || got["forever"].NotANumber || got["gone"].NotANumber {
		t.Errorf("a counter or an absent key reads as not a number: %+v", got)
	}
	if r, ok := got["gone"]; ok || r.Found || r.Value != 0 {
		t.Errorf("a missing key read %+v (present %v), want absent", r, ok)
	}
}

func TestReadCountersWithoutKeysMakesNoCall(t *testing.T) {
	t.Parallel()
	kv := &answerKV{err: errors.New("must not be called")}
	got, err := budget.ReadCounters(context.Background(), kv, "gate", nil)
	if err != nil || got == nil || len(got) != 0 || len(kv.calls) != 0 {
		t.Fatalf("no keys: %v, %v after %d calls; want an empty map and no call", got, err, len(kv.calls))
	}
}

// ReadNodes asks for every distinct unscoped counter of every node (a
// scoped budget has no one counter; two budgets on one key read it once)
// and the extra keys, in one getMany.
func TestReadNodesReadsTheUnscopedCountersOfEveryNodeAndTheExtraKeysInOneCall(t *testing.T) {
	t.Parallel()
	nodes := []plan.Node{
		{Name: "a", Budgets: []plan.Budget{
			{ID: "g", Key: "b:x:g:a:g", Ceilings: map[string]int64{"p": 10}},
			{ID: "per", Key: "b:x:g:a:per", ScopeBy: "payload.account"},
			{ID: "shared", Key: "b:x:shared:k", Ceilings: map[string]int64{"p": 5}},
		}},
		{Name: "b", Budgets: []plan.Budget{{ID: "shared", Key: "b:x:shared:k", Ceilings: map[string]int64{"p": 7}}}},
	}
	kv := &answerKV{res: queen.KVResponse{Results: []queen.KVResult{{Op: queen.OpGetMany,
		Rows: []queen.KVRow{{Key: "b:x:g:a:g", Value: json.RawMessage("4")}}}}}}
	got, err := budget.ReadNodes(context.Background(), kv, "gate", nodes, "brk:x:g:a")
	if err != nil {
		t.Fatal(err)
	}
	if len(kv.calls) != 1 || len(kv.calls[0]) != 1 {
		t.Fatalf("sent %+v, want one call of one getMany", kv.calls)
	}
	if keys := strings.Join(kv.calls[0][0].Keys, " "); keys != "b:x:g:a:g b:x:shared:k brk:x:g:a" {
		t.Fatalf("read %q, want the two unscoped counters and the breaker key", keys)
	}
	if got["b:x:g:a:g"].Value != 4 || got["b:x:shared:k"].Found {
		t.Fatalf("readings %+v", got)
	}
	l := &budget.Limiter{KV: &answerKV{err: errors.New("must not be called")}, NS: "gate"}
	if got, err := l.ReadNodes(context.Background(), []plan.Node{{Name: "c", Budgets: []plan.Budget{{ID: "s", Key: "k", ScopeBy: "payload.x"}}}}); err != nil || len(got) != 0 {
		t.Fatalf("a node with only a scoped budget and no extra key: %v, %v; want no call", got, err)
	}
}

func TestReadCountersFailsOnAFailedRefusedOrMalformedAnswer(t *testing.T) {
	t.Parallel()
	for name, kv := range map[string]*answerKV{
		"transport":                   {err: errors.New("connection reset")},
		"refused":                     {res: queen.KVResponse{Refusal: &queen.Refusal{Message: "kv_disabled"}}},
		"two results for one getMany": {res: queen.KVResponse{Results: []queen.KVResult{{}, {}}}},
	} {
		got, err := budget.ReadCounters(context.Background(), kv, "gate", []string{"k"})
		if !errors.Is(err, budget.ErrCall) || got != nil {
			t.Errorf("%s: %v, %v; want no readings and an error wrapping ErrCall", name, got, err)
		}
	}
}

func TestLimiterReadKeysReadsItsNamespace(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.set("k1", 12, 900*time.Millisecond)
	l := &budget.Limiter{KV: f, NS: "tenant-a"}
	got, err := l.ReadKeys(context.Background(), []string{"k1", "k2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || f.calls[0][0].NS != "tenant-a" {
		t.Fatalf("sent %+v, want one getMany in tenant-a", f.calls)
	}
	if r := got["k1"]; r.Value != 12 || !r.ExpiresAt.Equal(f.now.Add(900*time.Millisecond)) {
		t.Errorf("k1 = %+v, want 12 ending 900 ms from now", r)
	}
	if _, ok := got["k2"]; ok {
		t.Errorf("k2 was never charged yet reads %+v", got["k2"])
	}
}

func TestReadingJudgesItsWindowAgainstACeilingFromThePlan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 21, 8, 0, 0, 0, time.UTC)
	live := budget.Reading{Value: 50, ExpiresAt: now.Add(400 * time.Millisecond), Found: true}
	if ms, ok := live.WindowEnd(); !ok || ms != now.Add(400*time.Millisecond).UnixMilli() {
		t.Errorf("window end %d %v, want the expiry in epoch ms", ms, ok)
	}
	if d := live.ResetsIn(now); d != 400*time.Millisecond {
		t.Errorf("resets in %s, want 400ms", d)
	}
	if d := live.ResetsIn(now.Add(time.Second)); d != 0 {
		t.Errorf("a window that ended resets in %s, want 0", d)
	}
	var absent budget.Reading
	if _, ok := absent.WindowEnd(); ok || absent.ResetsIn(now) != 0 || absent.Spent(50, now) {
		t.Error("an absent counter has a window end, a reset delay or is spent")
	}
	forever := budget.Reading{Value: 80, Found: true}
	if _, ok := forever.WindowEnd(); ok || forever.ResetsIn(now) != 0 {
		t.Error("a counter without expiry has a window end or a reset delay")
	}
	for _, tc := range []struct {
		name    string
		r       budget.Reading
		ceiling int64
		at      time.Time
		want    bool
	}{
		{"at its ceiling in a live window", live, 50, now, true},
		{"over its ceiling", live, 40, now, true},
		{"below its ceiling", live, 51, now, false},
		{"its window ended", live, 50, now.Add(400 * time.Millisecond), false},
		{"no ceiling", live, 0, now, false},
		{"no expiry", forever, 50, now, false},
	} {
		if got := tc.r.Spent(tc.ceiling, tc.at); got != tc.want {
			t.Errorf("%s: spent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// rowsKV answers a getMany with those of its rows the op names, and records
// the ops.
type rowsKV struct {
	rows  []queen.KVRow
	calls [][]queen.KVOp
}

func (f *rowsKV) KV(_ context.Context, ops ...queen.KVOp) (queen.KVResponse, error) {
	f.calls = append(f.calls, ops)
	res := queen.KVResult{Op: queen.OpGetMany}
	for _, k := range ops[0].Keys {
		found := false
		for _, r := range f.rows {
			if r.Key == k {
				res.Rows, found = append(res.Rows, r), true
			}
		}
		if !found {
			res.Missing = append(res.Missing, k)
		}
	}
	return queen.KVResponse{Results: []queen.KVResult{res}}, nil
}

func counterRow(key, value string, end time.Time) queen.KVRow {
	r := queen.KVRow{Key: key, Value: json.RawMessage(value)}
	if !end.IsZero() {
		r.ExpiresAt = queen.Timestamp(end.Format(time.RFC3339Nano))
	}
	return r
}

// shedNode has two unscoped counters, g (two budgets: ceilings 10 and 4 on
// one path, 12 on the other, so 12 is its widest) and m (ceiling 6), and a
// scoped one that shedding never reads.
func shedNode() *plan.Node {
	return &plan.Node{Name: "entry", Budgets: []plan.Budget{
		{ID: "global", Key: "g", Ceilings: map[string]int64{"main": 10, "slow": 4}},
		{ID: "m", Key: "m", Ceilings: map[string]int64{"main": 6}},
		{ID: "per-acct", Key: "sc", ScopeBy: "payload.acct", Ceilings: map[string]int64{"main": 1}},
		{ID: "burst", Key: "g", Ceilings: map[string]int64{"slow": 12}},
	}}
}

func TestFullShedsOnlyWhenNoCounterHasRoomAndWaitsForTheLastWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 21, 8, 0, 0, 0, time.UTC)
	const cost = 2
	for _, tc := range []struct {
		name     string
		rows     []queen.KVRow
		wantFull bool
		wantWait int64
	}{
		{"both without room, the later window ends in 6.2 s",
			[]queen.KVRow{counterRow("g", "11", now.Add(6200*time.Millisecond)), counterRow("m", "5", now.Add(900*time.Millisecond))}, true, 7},
		{"both over their ceilings",
			[]queen.KVRow{counterRow("g", "40", now.Add(3*time.Second)), counterRow("m", "6", now.Add(2*time.Second))}, true, 3},
		// 10 + 2 fits g's widest ceiling 12, though not its narrower 10.
		{"the item fits g exactly at its widest ceiling",
			[]queen.KVRow{counterRow("g", "10", now.Add(time.Second)), counterRow("m", "6", now.Add(time.Second))}, false, 0},
		{"m has room",
			[]queen.KVRow{counterRow("g", "12", now.Add(time.Second)), counterRow("m", "4", now.Add(time.Second))}, false, 0},
		{"m was never charged",
			[]queen.KVRow{counterRow("g", "12", now.Add(time.Second))}, false, 0},
		{"m holds a record, not a number",
			[]queen.KVRow{counterRow("g", "12", now.Add(time.Second)), counterRow("m", `{"at":1}`, now.Add(time.Second))}, false, 0},
		{"m holds a fraction",
			[]queen.KVRow{counterRow("g", "12", now.Add(time.Second)), counterRow("m", "5.5", now.Add(time.Second))}, false, 0},
		{"neither window expires",
			[]queen.KVRow{counterRow("g", "12", time.Time{}), counterRow("m", "6", time.Time{})}, true, 1},
		{"both windows already ended",
			[]queen.KVRow{counterRow("g", "12", now.Add(-2*time.Second)), counterRow("m", "6", now.Add(-time.Millisecond))}, true, 1},
		{"a window ends in 1 ms",
			[]queen.KVRow{counterRow("g", "12", now.Add(time.Millisecond)), counterRow("m", "6", time.Time{})}, true, 1},
		{"a window ends in exactly 2 s",
			[]queen.KVRow{counterRow("g", "12", now.Add(2*time.Second)), counterRow("m", "6", time.Time{})}, true, 2},
	} {
		kv := &rowsKV{rows: append(tc.rows, counterRow("sc", "99", now.Add(time.Minute)))}
		l := &budget.Limiter{KV: kv, NS: "gate"}
		wait, full, err := l.Full(context.Background(), budget.Unscoped(shedNode()), cost, now)
		if err != nil || full != tc.wantFull || wait != tc.wantWait {
			t.Errorf("%s: wait %d full %v err %v, want wait %d full %v", tc.name, wait, full, err, tc.wantWait, tc.wantFull)
		}
		if len(kv.calls) != 1 || len(kv.calls[0]) != 1 || kv.calls[0][0].NS != "gate" || strings.Join(kv.calls[0][0].Keys, ",") != "g,m" {
			t.Errorf("%s: sent %+v, want one getMany of g,m in gate", tc.name, kv.calls)
		}
	}
}

func TestFullNeverShedsWithoutCountersOrOnAFailedRead(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 21, 8, 0, 0, 0, time.UTC)
	idle := &answerKV{err: errors.New("must not be called")}
	scopedOnly := &plan.Node{Budgets: []plan.Budget{{ID: "s", Key: "s", ScopeBy: "payload.acct", Ceilings: map[string]int64{"main": 1}}}}
	wait, full, err := (&budget.Limiter{KV: idle, NS: "gate"}).Full(context.Background(), budget.Unscoped(scopedOnly), 1, now)
	if full || wait != 0 || err != nil || len(idle.calls) != 0 {
		t.Errorf("only scoped budgets: wait %d full %v err %v after %d calls; want not full and no call", wait, full, err, len(idle.calls))
	}
	for name, kv := range map[string]*answerKV{
		"transport": {err: errors.New("connection reset")},
		"refused":   {res: queen.KVResponse{Refusal: &queen.Refusal{Message: "kv_disabled"}}},
	} {
		wait, full, err := (&budget.Limiter{KV: kv, NS: "gate"}).Full(context.Background(), budget.Unscoped(shedNode()), 1, now)
		if full || wait != 0 || !errors.Is(err, budget.ErrCall) {
			t.Errorf("%s: wait %d full %v err %v; want not full and an error wrapping ErrCall", name, wait, full, err)
		}
	}
}

// shedReference is the push front door's shedding check as gate-api wrote
// it before it moved here, over raw kv rows and every unscoped budget one
// by one: the behaviour Full keeps.
func shedReference(rows []queen.KVRow, n *plan.Node, cost int64, now time.Time) (int64, bool) {
	byKey := map[string]queen.KVRow{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	unscoped := 0
	var wait int64 = 1
	for _, b := range n.Budgets {
		if b.ScopeBy != "" {
			continue
		}
		unscoped++
		row, ok := byKey[b.Key]
		if !ok {
			return 0, false
		}
		var widest int64
		for _, c := range b.Ceilings {
			widest = max(widest, c)
		}
		v, err := row.Int64()
		if err != nil || v+cost <= widest {
			return 0, false
		}
		w := int64(1)
		if t, err := row.ExpiresAt.Time(); err == nil && !t.IsZero() {
			w = max(1, (t.Sub(now).Milliseconds()+999)/1000)
		}
		wait = max(wait, w)
	}
	if unscoped == 0 {
		return 0, false
	}
	return wait, true
}

func TestFullAgreesWithTheFrontDoorsFormerCheckOnRandomNodesAndRows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 21, 8, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 11))
	keys := []string{"a", "b", "c"}
	fulls := 0
	for i := range 4000 {
		n := &plan.Node{}
		for j := range 1 + rng.IntN(4) {
			b := plan.Budget{ID: fmt.Sprint("b", j), Key: keys[rng.IntN(len(keys))], Ceilings: map[string]int64{}}
			if rng.IntN(5) == 0 {
				b.ScopeBy = "payload.acct"
			}
			for _, p := range []string{"main", "slow"}[:1+rng.IntN(2)] {
				b.Ceilings[p] = rng.Int64N(11)
			}
			n.Budgets = append(n.Budgets, b)
		}
		var rows []queen.KVRow
		for _, k := range keys {
			var end time.Time
			switch rng.IntN(4) {
			case 1:
				end = now.Add(time.Duration(rng.Int64N(9000)) * time.Millisecond)
			case 2:
				end = now.Add(-time.Duration(1+rng.Int64N(3000)) * time.Millisecond)
			}
			switch rng.IntN(8) {
			case 0: // never charged
			case 1:
				rows = append(rows, counterRow(k, `{"at":1,"retryAfterSeconds":4}`, end))
			default:
				rows = append(rows, counterRow(k, fmt.Sprint(rng.Int64N(15)), end))
			}
		}
		cost := 1 + rng.Int64N(5)
		wantWait, wantFull := shedReference(rows, n, cost, now)
		wait, full, err := (&budget.Limiter{KV: &rowsKV{rows: rows}, NS: "gate"}).Full(context.Background(), budget.Unscoped(n), cost, now)
		if err != nil || full != wantFull || wait != wantWait {
			t.Fatalf("case %d: cost %d, budgets %+v, rows %+v: wait %d full %v err %v, want wait %d full %v", i, cost, n.Budgets, rows, wait, full, err, wantWait, wantFull)
		}
		if full {
			fulls++
		}
	}
	if fulls < 100 || fulls > 3900 {
		t.Fatalf("%d of 4000 random cases were full: the cases do not exercise both answers", fulls)
	}
}
