package queen

import "testing"

// A relay sums the calls of its stages' client and its store's: Add is
// field by field, and undoes Sub.
func TestCallsAddIsFieldByField(t *testing.T) {
	a := Calls{Pop: 1, Push: 2, Txn: 3, KV: 4, KVIncr: 5, Lease: 6, Other: 7}
	b := Calls{Pop: 10, Push: 20, Txn: 30, KV: 40, KVIncr: 50, Lease: 60, Other: 70}
	want := Calls{Pop: 11, Push: 22, Txn: 33, KV: 44, KVIncr: 55, Lease: 66, Other: 77}
	if got := a.Add(b); got != want {
		t.Fatalf("%+v + %+v = %+v, want %+v", a, b, got, want)
	}
	if got := a.Add(b).Sub(b); got != a {
		t.Fatalf("(a + b) - b = %+v, want %+v", got, a)
	}
	if a.Add(b).Total() != a.Total()+b.Total() {
		t.Fatal("the total of a sum is not the sum of the totals")
	}
}
