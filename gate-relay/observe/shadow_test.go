package observe

import (
	"encoding/json"
	"testing"
	"time"

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
