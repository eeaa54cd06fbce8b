package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
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
	if r := got["breaker"]; r.Value != 0 || !r.Found || !r.ExpiresAt.Equal(end) {
		t.Errorf("breaker = %+v, want found, value 0, ending at %s", r, end)
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
