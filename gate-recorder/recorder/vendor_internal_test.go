package recorder

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/queen"
)

// The meter rows of more budgets than one getMany may name are read in
// several calls, every row found once and a malformed one left out.
func TestReadMetersInChunks(t *testing.T) {
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	ns := b.Namespace()
	var keys []string
	var ops []queen.KVOp
	for i := range 5 {
		k := fmt.Sprintf("m:%d", i)
		keys = append(keys, k)
		raw, _ := json.Marshal(budget.MeterRow{Limit: int64(10 + i), Declared: 50, Until: 1})
		if i == 3 {
			raw = json.RawMessage(`"not a row"`)
		}
		ops = append(ops, queen.KVPut(ns, k, raw, queen.PutOpts{TTLSeconds: 60}))
	}
	if _, err := c.KV(t.Context(), ops...); err != nil {
		t.Fatal(err)
	}
	got, err := readMeters(t.Context(), c, ns, append(keys, "m:absent"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got["m:0"].Limit != 10 || got["m:4"].Limit != 14 {
		t.Fatalf("rows %+v: want m:0, m:1, m:2 and m:4 (m:3 is malformed)", got)
	}
}
