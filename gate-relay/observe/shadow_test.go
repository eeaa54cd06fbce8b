package observe

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/store"
)

// samples sums the items of every samples row in kv of session.
func (r *rig) samples(session int64) (items int64, rows int) {
	for _, row := range r.rows() {
		if row.Kind != handover.KindSamples || row.Session != session {
			continue
		}
		rows++
		for _, s := range row.Samples {
			items += s[1]
		}
	}
	return items, rows
}

// An enforcing graph records no seconds until a shadow candidate is set;
// from the next flush its settles are recorded per second in a session of
// the candidate's own (since); once the candidate is deleted, recording
// stops again at the next flush.
func TestShadowStartsAndStopsPerSecondRecording(t *testing.T) {
	r := newRig(t, Config{})
	r.src.set(runtime(t0, 0, false, 0))
	r.flush()
	r.settle("main", 7, 7)
	r.at(2 * time.Second)
	r.flush()
	if n := len(r.rows()); n != 0 {
		t.Fatalf("an enforcing graph without a shadow wrote %d handover rows", n)
	}

	since := ms(2 * time.Second)
	st := store.New(r.c, ns)
	if err := st.PutShadow(t.Context(), store.Shadow{Application: "a", Graph: "g", Since: since, SetBy: "api", Candidate: json.RawMessage(`{"nodes":{"n":{"budgets":[]}}}`)}); err != nil {
		t.Fatal(err)
	}
	r.flush() // reads the candidate, mints the recorders of the session
	r.at(3 * time.Second)
	r.settle("main", 5, 5)
	r.settle("alt", 4, 8)
	r.at(4 * time.Second)
	r.flush()
	if items, rows := r.samples(since); items != 9 || rows != 2 {
		t.Fatalf("with a shadow set: %d items in %d samples rows of session %d, want 9 in 2 (main and alt)", items, rows, since)
	}
	w := r.row(handover.WatchKey(r.recorder()), "recorder")
	if w.Session != since || w.Watch == nil || w.Watch.Through != ms(4*time.Second) {
		t.Fatalf("recorder row %+v, want session %d through %d", w, since, ms(4*time.Second))
	}

	// Deleted: the next flush closes the session's recorder; later settles
	// are not recorded.
	r.commit(keys(r.rows())...)
	if _, err := st.DeleteShadow(t.Context(), "a", "g"); err != nil {
		t.Fatal(err)
	}
	r.flush()
	r.at(6 * time.Second)
	r.settle("main", 11, 11)
	r.at(8 * time.Second)
	r.flush()
	if items, _ := r.samples(since); items != 0 {
		t.Fatalf("after the candidate was deleted %d items were recorded", items)
	}
}

// settleItems is a committed settle on path of node n whose forwarded
// items are payloads (each of cost 1).
func (r *rig) settleItems(path string, payloads ...string) {
	r.h.Observe(stage.Settled{App: "a", Graph: "g", Path: path, Node: "n", Partition: "p", Items: len(payloads), Cost: int64(len(payloads)), At: r.clk.Now(),
		Forwarded: func(yield func([]byte, int64) bool) {
			for _, p := range payloads {
				if !yield([]byte(p), 1) {
					return
				}
			}
		}})
}

// keyed sums the keys rows in kv of session: items per "scope op", and
// the overflow.
func (r *rig) keyed(session int64) (per map[string]int64, overflow int64, rows int) {
	per = map[string]int64{}
	for _, row := range r.rows() {
		if row.Kind != handover.KindKeys || row.Session != session || row.Keys == nil {
			continue
		}
		rows++
		overflow += row.Keys.Overflow
		for _, e := range row.Keys.Entries {
			per[e.Scope+" "+e.Op] += e.Items
		}
	}
	return per, overflow, rows
}

// A scoped and op-filtered candidate makes the relay record, per second,
// the items per scope value and op it needs — at most the cap of distinct
// ones per node a second, the rest counted in the overflow — beside the
// per-second totals; a committed keys row is forgotten; an unkeyed
// candidate records no keys.
func TestKeyedShadowRecordsValuesAndOpsWithinTheCap(t *testing.T) {
	r := newRig(t, Config{KeysPerSecond: 2})
	r.src.set(runtime(t0, 0, false, 0))
	since := ms(0)
	st := store.New(r.c, ns)
	cand := `{"nodes":{"n":{"budgets":[{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"payload.account"},{"id":"deletes","count":1,"timeMs":1000,"whenOp":["del"]},{"id":"all","count":100,"timeMs":1000}]}}}`
	if err := st.PutShadow(t.Context(), store.Shadow{Application: "a", Graph: "g", Since: since, SetBy: "api", Candidate: json.RawMessage(cand)}); err != nil {
		t.Fatal(err)
	}
	r.flush()
	r.at(1 * time.Second)
	r.settleItems("main", `{"account":"a","op":"del"}`, `{"account":"a","op":"del"}`, `{"account":"b","op":"get"}`)
	// A third distinct value in the same second is past the cap of 2.
	r.settleItems("alt", `{"account":"c","op":"get"}`, `{"op":"get"}`)
	r.at(2 * time.Second)
	r.settleItems("main", `{"account":"c","op":"get"}`)
	r.at(3 * time.Second)
	r.flush()
	per, overflow, rows := r.keyed(since)
	want := map[string]int64{`{"payload.account":"a"} del`: 2, `{"payload.account":"b"} get`: 1, `{"payload.account":"c"} get`: 1}
	if !reflect.DeepEqual(per, want) || overflow != 2 || rows != 3 {
		t.Fatalf("keys %v, overflow %d in %d rows; want %v, overflow 2 in 3 rows (main s1, alt s1, main s2)", per, overflow, rows, want)
	}
	if items, _ := r.samples(since); items != 6 {
		t.Fatalf("the totals hold %d items, want all 6", items)
	}
	if s := r.h.Stats(); s.KeyCells != 3 {
		t.Fatalf("%d key cells held before the commit, want 3", s.KeyCells)
	}
	r.commit(keys(r.rows())...)
	r.flush()
	if s := r.h.Stats(); s.KeyCells != 0 {
		t.Fatalf("%d key cells still held after every row was committed", s.KeyCells)
	}

	// An unkeyed candidate: totals only.
	if err := st.PutShadow(t.Context(), store.Shadow{Application: "a", Graph: "g", Since: since, SetBy: "api", Candidate: json.RawMessage(`{"nodes":{"n":{"budgets":[{"id":"all","count":5,"timeMs":1000}]}}}`)}); err != nil {
		t.Fatal(err)
	}
	r.flush()
	r.at(4 * time.Second)
	r.settleItems("main", `{"account":"a","op":"del"}`)
	r.at(5 * time.Second)
	r.flush()
	if _, _, rows := r.keyed(since); rows != 0 {
		t.Fatalf("an unkeyed candidate wrote %d keys rows", rows)
	}
	if items, _ := r.samples(since); items != 1 {
		t.Fatalf("the totals hold %d items, want 1", items)
	}
}
