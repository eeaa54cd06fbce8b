package live

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
)

// FuzzSettleBody: whatever the body, the settle parser answers a refusal
// naming a field or a message with a transaction id, object data and a
// whole actual cost within the node's bound — never a panic.
func FuzzSettleBody(f *testing.F) {
	f.Add([]byte(`{"message":{"transactionId":"t","data":{"_gate":{}}},"actualCost":812}`))
	f.Add([]byte(`{"message":{"transactionId":"","data":[]},"actualCost":-1}`))
	f.Add([]byte(`{"message":null,"actualCost":1e400}`))
	f.Add([]byte(`{"message":"x","actualCost":"NaN"}`))
	f.Add([]byte(`{"message":{"transactionId":"t","data":{}},"actualCost":4.0}`))
	n := &plan.Node{Name: "tokens", Cost: cost.Rule{Path: "payload.max_tokens", Default: 1000, Max: 4000}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var b settleBody
		if bad := httpapi.DecodeStrict(raw, &b, "the settle body"); bad != nil {
			return
		}
		m, bad := readSettleMessage(b.Message)
		if bad != nil {
			if bad.Body().Field == "" {
				t.Fatalf("a refusal of %s names no field", raw)
			}
			return
		}
		if m.TransactionID == nil || *m.TransactionID == "" || len(*m.TransactionID) > maxTransactionID || !json.Valid(m.Data) {
			t.Fatalf("accepted message %+v", m)
		}
		a, bad := readActualCost(b.ActualCost, n)
		if bad != nil {
			if bad.Body().Field != "actualCost" {
				t.Fatalf("a cost refusal of %s names %q", raw, bad.Body().Field)
			}
			return
		}
		if a < 0 || a > 4000*absurdFactor {
			t.Fatalf("accepted actualCost %d from %s", a, raw)
		}
	})
}
