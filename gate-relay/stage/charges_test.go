package stage

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
)

func stageSigner(t *testing.T) *cost.Signer {
	t.Helper()
	sg, err := cost.NewSigner(bytes.Repeat([]byte{5}, cost.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

// chargesOf reads and verifies the stamps of partition p's forwarded
// items: every one signed for its own transaction id.
func (r *rig) chargesOf(p string, sg *cost.Signer) []cost.Charge {
	r.t.Helper()
	var out []cost.Charge
	for _, m := range r.mini.Messages(r.out, p) {
		raw, ok := cost.StampOf(m.Data)
		if !ok {
			r.t.Fatalf("no stamp: %s", m.Data)
		}
		st, err := cost.ParseStamp(raw)
		if err != nil || len(st.Charges) != 1 {
			r.t.Fatalf("stamp %s: %v", raw, err)
		}
		if !sg.Verify(st, "a", m.TransactionID) {
			r.t.Fatalf("the stamp of %s does not verify: %s", m.TransactionID, raw)
		}
		out = append(out, st.Charges[0])
	}
	return out
}

// Riding, the stage writes the window it last saw: the first claim knows
// none and leaves the true one in its correction row; the next names it
// and writes no row.
func TestRiddenChargesNameTheirWindowOrLeaveACorrection(t *testing.T) {
	t.Parallel()
	sg := stageSigner(t)
	r := newRig(t, rigOpts{ceiling: 100, ttl: 10, riders: true, maxPark: 30 * time.Second, signer: sg})
	r.fill("p", seqs(5)...)
	r.claim()
	first := r.chargesOf("p", sg)
	if len(first) != 5 || first[0].Node != "n" || first[0].Cost != 1 || len(first[0].Windows) != 1 || first[0].Windows[0] != 0 || first[0].Row == "" {
		t.Fatalf("first claim's charges: %+v", first)
	}
	row, ok := r.mini.KV(r.ns, budget.CorrectionKey(first[0].Row))
	if !ok {
		t.Fatal("no correction row for a claim whose window the stage did not know")
	}
	var fix budget.Correction
	if err := json.Unmarshal(row.Value, &fix); err != nil {
		t.Fatal(err)
	}
	end, ok := r.mini.KV(r.ns, r.key)
	if !ok || fix[r.key] != end.ExpiresAt.UnixMilli() {
		t.Fatalf("correction %v, counter window %v", fix, end.ExpiresAt)
	}
	r.fill("q", `{"i":5}`)
	r.claim()
	if w := r.chargesOf("q", sg)[0].Windows[0]; w != fix[r.key] || r.s.corrections.Load() != 1 {
		t.Fatalf("second claim names window %d (want %d), corrections %d (want 1)", w, fix[r.key], r.s.corrections.Load())
	}
}

// On the separate path the charge precedes the settle: the stamp names
// the window exactly and no correction is written.
func TestSeparateChargesNameTheirWindowExactly(t *testing.T) {
	t.Parallel()
	sg := stageSigner(t)
	r := newRig(t, rigOpts{ceiling: 100, ttl: 10, maxPark: 30 * time.Second, signer: sg})
	r.fill("p", seqs(3)...)
	r.claim()
	end, _ := r.mini.KV(r.ns, r.key)
	for _, c := range r.chargesOf("p", sg) {
		if c.Windows[0] != end.ExpiresAt.UnixMilli() {
			t.Fatalf("charge %+v, window %v", c, end.ExpiresAt)
		}
	}
	if r.s.corrections.Load() != 0 {
		t.Fatal("a correction row was written for exact windows")
	}
}

// Without a signer nothing changes: the stamp carries no charges.
func TestUnsignedStagesWriteNoCharges(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, ttl: 10, riders: true, maxPark: 30 * time.Second})
	r.fill("p", seqs(2)...)
	r.claim()
	for _, m := range r.mini.Messages(r.out, "p") {
		if bytes.Contains(m.Data, []byte(`"charges"`)) || bytes.Contains(m.Data, []byte(`"sig"`)) {
			t.Fatalf("unsigned stage wrote charges: %s", m.Data)
		}
	}
}

// A later hop carries the charge records of the hops before it when their
// signature verifies for the item's own transaction id, and drops forged
// or altered ones.
func TestALaterHopCarriesVerifiedChargesAndDropsForgedOnes(t *testing.T) {
	t.Parallel()
	sg := stageSigner(t)
	r := newRig(t, rigOpts{ceiling: 100, ttl: 10, riders: true, maxPark: 30 * time.Second, signer: sg})
	earlier := func(txn string, signer *cost.Signer) string {
		st := cost.GateStamp{Graph: "g", Path: "main", Hop: 1, Node: "n", At: 7}
		ch := cost.AppendCharges(nil, []cost.Charge{{Node: "requests", Cost: 1, At: 7, Windows: []int64{60000}, Row: "r0"}})
		out, _ := st.AppendStamped(nil, []byte(`{"i":0}`), cost.Splice{Charges: ch, Signer: signer, App: "a", Txn: txn})
		return string(out)
	}
	other, err := cost.NewSigner(bytes.Repeat([]byte{6}, cost.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	// fill names the items p-0 and p-1: the first carries a record signed
	// for its own id, the second one signed with another key.
	r.fill("p", earlier("p-0", sg), earlier("p-1", other))
	r.claim()
	var got [][]cost.Charge
	for _, m := range r.mini.Messages(r.out, "p") {
		raw, _ := cost.StampOf(m.Data)
		st, err := cost.ParseStamp(raw)
		if err != nil || !sg.Verify(st, "a", m.TransactionID) {
			t.Fatalf("stamp %s: %v", raw, err)
		}
		got = append(got, st.Charges)
	}
	if len(got) != 2 || len(got[0]) != 2 || got[0][0].Node != "requests" || got[0][1].Node != "n" || len(got[1]) != 1 || got[1][0].Node != "n" {
		t.Fatalf("charges %+v: want the verified earlier record carried and the forged one dropped", got)
	}
	if r.s.forged.Load() != 1 {
		t.Fatalf("forged %d, want 1", r.s.forged.Load())
	}
}

// A fixed cost is charged exactly: its stage records nothing, and its
// stamps are as before (no charges, no signature).
func TestAFixedCostRecordsNoCharge(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, ttl: 10, riders: true, maxPark: 30 * time.Second, signer: stageSigner(t)})
	r.s.cfg.Node.Cost = cost.Fixed(1)
	r.fill("p", seqs(3)...)
	r.claim()
	msgs := r.mini.Messages(r.out, "p")
	if len(msgs) != 3 {
		t.Fatalf("forwarded %d", len(msgs))
	}
	for _, m := range msgs {
		if bytes.Contains(m.Data, []byte(`"charges"`)) || bytes.Contains(m.Data, []byte(`"sig"`)) {
			t.Fatalf("a fixed-cost stage recorded a charge: %s", m.Data)
		}
	}
}
