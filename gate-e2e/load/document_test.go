package load

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/gate/libs/declare"
)

// The vendor scenarios declare one node with a partitioned Gate-owned
// ingress, their budget (and, for settle, the max_tokens cost), an egress
// the workers pop and one path through it; the compiler accepts each.
func TestTheVendorScenariosDeclareTheirOneNodeGraphs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		doc  map[string]any
		want string
	}{
		{"vendor", VendorDocument("shop", "calls", 20),
			`{"application":"shop","graph":"calls","nodes":{"call":{"budgets":[{"count":20,"id":"vendor","timeMs":1000,"vendorMeter":{"headers":"x-ratelimit"}}],"egress":{"group":"vendor-workers","queue":"gate.e2e.shop.calls.out"},"ingress":{"partitions":4}}},"paths":[{"name":"main","nodes":["call"]}],"version":1}`},
		{"vendor settle", SettleDocument("shop", "llm"),
			`{"application":"shop","graph":"llm","nodes":{"tokens":{"budgets":[{"count":20000,"id":"tpw","subWindows":1,"timeMs":10000}],"cost":{"default":400,"max":400,"path":"payload.max_tokens"},"egress":{"group":"vendor-workers","queue":"gate.e2e.shop.llm.out"},"ingress":{"partitions":4}}},"paths":[{"name":"main","nodes":["tokens"]}],"version":1}`},
	} {
		body, err := json.Marshal(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != tc.want {
			t.Errorf("%s document:\n got %s\nwant %s", tc.name, body, tc.want)
		}
		res, err := declare.Compile(declare.Input{Body: body})
		if err != nil {
			t.Fatalf("%s document: %v", tc.name, err)
		}
		if res.Plan == nil {
			t.Errorf("%s document refused: %v", tc.name, res.Findings)
		}
	}
}
