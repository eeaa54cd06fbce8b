package cost

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func testSigner(t testing.TB, fill byte) *Signer {
	t.Helper()
	s, err := NewSigner(bytes.Repeat([]byte{fill}, MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A relay's splice with charges writes a signed stamp that ParseStamp reads
// back member for member and the fleet's key verifies for the transaction
// id it was pushed with, and for no other.
func TestSignedSpliceVerifiesAndReadsBack(t *testing.T) {
	t.Parallel()
	sg := testSigner(t, 7)
	st := GateStamp{Graph: "llm", Path: "main", Hop: 2, Node: "tokens", At: 1700000000123}
	charges := []Charge{
		{Node: "requests", Cost: 1, At: 1700000000001, Windows: []int64{1700000060000}, Row: "r1"},
		{Node: "tokens", Cost: 4000, At: 1700000000120, Windows: []int64{1700000001000, 0}, Row: "r\"2"},
	}
	enc := AppendCharges(nil, charges)
	out, ok := st.AppendStamped(nil, []byte(`{"prompt":"hi","_gate":{"attempt":2}}`), Splice{Head: st.AppendHead(nil), KeepAttempt: true, Charges: enc, Signer: sg, App: "a", Txn: "tx-1"})
	if !ok || !json.Valid(out) {
		t.Fatalf("splice: %s", out)
	}
	raw, ok := StampOf(out)
	if !ok {
		t.Fatalf("no stamp in %s", out)
	}
	got, err := ParseStamp(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Graph != "llm" || got.Node != "tokens" || got.Hop != 2 || !got.HasAttempt || got.Attempt != 2 || len(got.Charges) != 2 ||
		got.Charges[1].Cost != 4000 || got.Charges[1].Row != "r\"2" || got.Charges[1].Windows[0] != 1700000001000 || len(got.Sig) != SigLen {
		t.Fatalf("read back %+v from %s", got, raw)
	}
	if !sg.Verify(got, "a", "tx-1") {
		t.Fatalf("the relay's own stamp does not verify: %s", raw)
	}
	if sg.Verify(got, "a", "tx-2") {
		t.Fatal("a stamp verified for another transaction id")
	}
	if sg.Verify(got, "b", "tx-1") {
		t.Fatal("a stamp verified for another application")
	}
	if testSigner(t, 8).Verify(got, "a", "tx-1") {
		t.Fatal("a stamp verified under another key")
	}
	// The canonical encoding is what was written: a worker that decodes
	// and re-encodes the payload keeps a stamp that verifies.
	if want := got.AppendJSON(nil); !bytes.Equal(want, raw) {
		t.Fatalf("re-encoded %s, written %s", want, raw)
	}
}

// Altering any member, or dropping the signature, breaks the signature.
func TestAlteredStampsDoNotVerify(t *testing.T) {
	t.Parallel()
	sg := testSigner(t, 1)
	base := GateStamp{Graph: "g", Path: "p", Hop: 1, Node: "n", At: 10,
		Charges: []Charge{{Node: "n", Cost: 40, At: 9, Windows: []int64{1000}, Row: "r"}}}
	base.Sig = string(sg.AppendSig(nil, base.AppendSigned(nil), "a", "t"))
	if !sg.Verify(base, "a", "t") {
		t.Fatal("the signed stamp does not verify")
	}
	alter := []func(*GateStamp){
		func(s *GateStamp) { s.Graph = "h" },
		func(s *GateStamp) { s.Path = "" },
		func(s *GateStamp) { s.Hop = 2 },
		func(s *GateStamp) { s.Node = "m" },
		func(s *GateStamp) { s.At = 11 },
		func(s *GateStamp) { s.Attempt, s.HasAttempt = 0, true },
		func(s *GateStamp) { s.Charges[0].Cost = 400 },
		func(s *GateStamp) { s.Charges[0].Node = "x" },
		func(s *GateStamp) { s.Charges[0].At = 8 },
		func(s *GateStamp) { s.Charges[0].Windows = []int64{2000} },
		func(s *GateStamp) { s.Charges[0].Windows = append(s.Charges[0].Windows, 1) },
		func(s *GateStamp) { s.Charges[0].Row = "q" },
		func(s *GateStamp) { s.Charges = append(s.Charges, s.Charges[0]) },
		func(s *GateStamp) { s.Charges = nil },
		func(s *GateStamp) { s.Sig = "" },
		func(s *GateStamp) { s.Sig = strings.Repeat("A", SigLen) },
		func(s *GateStamp) { s.Sig = s.Sig[:SigLen-1] + "!" },
	}
	for i, f := range alter {
		s := base
		s.Charges = []Charge{base.Charges[0]}
		s.Charges[0].Windows = []int64{1000}
		f(&s)
		if sg.Verify(s, "a", "t") {
			t.Errorf("alteration %d verified: %+v", i, s)
		}
	}
}

// ParseStamp refuses what no relay writes.
func TestParseStampIsStrict(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{}`, `[]`, `"x"`, `{"graph":"g","hop":1,"node":"n"}`,
		`{"graph":"g","hop":1,"node":"n","at":1,"extra":1}`,
		`{"graph":"g","hop":1,"node":"n","at":1,"charges":[{"node":"n","cost":1,"at":1,"windows":[1]}]}`,
		`{"graph":"g","hop":1,"node":"n","at":1,"charges":[{"node":"n","cost":1.5,"at":1,"windows":[1],"row":"r"}]}`,
		`{"graph":"g","hop":1,"node":"n","at":1} {}`,
		`{"graph":"g","hop":1,"node":"n","at":1,"charges":[` + strings.Repeat(`{"node":"n","cost":1,"at":1,"windows":[],"row":""},`, MaxCharges) + `{"node":"n","cost":1,"at":1,"windows":[],"row":""}]}`,
	} {
		if st, err := ParseStamp([]byte(raw)); err == nil {
			t.Errorf("ParseStamp(%s) = %+v, want an error", raw, st)
		}
	}
}

func FuzzParseStamp(f *testing.F) {
	sg := testSigner(f, 3)
	f.Add([]byte(`{"graph":"g","hop":1,"node":"n","at":1,"charges":[{"node":"n","cost":1,"at":1,"windows":[1],"row":"r"}],"sig":"AAAAAAAAAAAAAAAAAAAAAA"}`))
	f.Add([]byte(`{"graph":"g","path":"p","hop":0,"node":"n","at":5,"attempt":3}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		st, err := ParseStamp(raw)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to valid JSON that parses to the same
		// stamp, and a forged signature never verifies.
		enc := st.AppendJSON(nil)
		if !json.Valid(enc) {
			t.Fatalf("re-encoded stamp is not JSON: %s", enc)
		}
		back, err := ParseStamp(enc)
		if err != nil || !bytes.Equal(back.AppendJSON(nil), enc) {
			t.Fatalf("round trip: %v %s", err, enc)
		}
		if sg.Verify(st, "a", "t") && st.Sig != string(sg.AppendSig(nil, st.AppendSigned(nil), "a", "t")) {
			t.Fatalf("a signature verified that the key did not make: %s", raw)
		}
	})
}

func BenchmarkSignedSplice(b *testing.B) {
	sg := testSigner(b, 9)
	st := GateStamp{Graph: "bench", Path: "main", Hop: 1, Node: "egress", At: 1700000000000}
	head := st.AppendHead(nil)
	enc := AppendCharges(nil, []Charge{{Node: "limit", Cost: 1, At: 1700000000000, Windows: []int64{1700000001000}, Row: "AbCdEfGhIjK"}})
	data := []byte(`{"i":123456}`)
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = st.AppendStamped(dst[:0], data, Splice{Head: head, KeepAttempt: true, Charges: enc, Signer: sg, App: "app", Txn: "0123456789abcdef0123456789abcdef"})
	}
}
