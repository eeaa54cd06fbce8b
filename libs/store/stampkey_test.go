package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/queen-mq/gate/libs/cost"
)

// Every binary that asks gets the one key: the first creates it, the rest
// (racing or later) read the winner's, so a stamp one signs the others
// verify.
func TestTheFleetSharesOneStampKey(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	signers := make([]*cost.Signer, 4)
	var wg sync.WaitGroup
	for i := range signers {
		wg.Go(func() {
			sg, err := s.StampSigner(ctx)
			if err != nil {
				t.Error(err)
			}
			signers[i] = sg
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	st := cost.GateStamp{Graph: "g", Hop: 1, Node: "n", At: 1, Charges: []cost.Charge{{Node: "n", Cost: 2, At: 1, Windows: []int64{5}, Row: "r"}}}
	st.Sig = string(signers[0].AppendSig(nil, st.AppendSigned(nil), "a", "t"))
	later, err := s.StampSigner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, sg := range append(signers, later) {
		if !sg.Verify(st, "a", "t") {
			t.Fatalf("signer %d does not verify signer 0's stamp: two keys", i)
		}
	}
}
