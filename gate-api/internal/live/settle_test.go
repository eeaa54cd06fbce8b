package live_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
)

// tokensTarget is a one-node graph whose cost is payload.max_tokens (max
// 4000) against 10,000 tokens per 10 s.
func tokensTarget(h *apitest.Harness) map[string]any {
	return map[string]any{
		"version": 1,
		"nodes": map[string]any{"tokens": map[string]any{
			"ingress": true,
			"cost":    map[string]any{"path": "payload.max_tokens", "default": 1000, "max": 4000},
			"budgets": []any{map[string]any{"id": "tpm", "count": 10000, "timeMs": 10000, "subWindows": 1}},
			"egress":  h.App + ".tok.out",
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"tokens"}}},
	}
}

// relayed charges est at node tokens the way a relay does and returns the
// egress message as a worker pops it: data with the relay's signed stamp.
func relayed(t *testing.T, h *apitest.Harness, graph, txn string, est int64) map[string]any {
	t.Helper()
	ctx := t.Context()
	key := plan.BudgetKey(h.App, graph, "tokens", "tpm")
	lim := &budget.Limiter{KV: h.Client, NS: h.NS}
	var b budget.Batch
	b.Add(est, []int{b.Counter(key, 10000, 10, "tpm")})
	ch, err := lim.Charge(ctx, &b, 1)
	if err != nil || !ch.OK() {
		t.Fatalf("charge: %v", err)
	}
	sg, err := h.Store.StampSigner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := cost.GateStamp{Graph: graph, Path: "main", Hop: 1, Node: "tokens", At: ch.State[0].ExpiresAt.UnixMilli() - 9000}
	charges := cost.AppendCharges(nil, []cost.Charge{{Node: "tokens", Cost: est, At: st.At, Windows: []int64{ch.State[0].ExpiresAt.UnixMilli()}, Row: "claim"}})
	data, ok := st.AppendStamped(nil, []byte(`{"prompt":"hi","max_tokens":`+jsonInt(est)+`}`), cost.Splice{Charges: charges, Signer: sg, App: h.App, Txn: txn})
	if !ok {
		t.Fatal("not stamped")
	}
	return map[string]any{"id": "m-" + txn, "transactionId": txn, "partition": "Default", "createdAt": "2026-12-02T12:00:00Z", "data": json.RawMessage(data)}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func counterOf(t *testing.T, h *apitest.Harness, graph string) int64 {
	t.Helper()
	key := plan.BudgetKey(h.App, graph, "tokens", "tpm")
	rd, err := budget.ReadCounters(t.Context(), h.Client, h.NS, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	return rd[key].Value
}

func settled(t *testing.T, a apitest.Answer) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(a.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The worker reports 812 tokens where 4,000 were estimated: 3,188 go back
// to the window the call was charged in, once; a higher cost is a debt.
func TestSettleRefundsTheWindowItWasChargedInOnce(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("tok"), tokensTarget(h)), http.StatusOK)
	url := h.GraphURL("tok") + "/nodes/tokens/settle"
	msg := relayed(t, h, "tok", "tx-1", 4000)
	a := h.Expect(h.Do(http.MethodPost, url, map[string]any{"message": msg, "actualCost": 812}), http.StatusOK)
	v := settled(t, a)
	if v["refunded"] != 3188.0 || v["duplicate"] != false || v["estimated"] != 4000.0 || !strings.Contains(v["note"].(string), "given back") {
		t.Fatalf("answer: %s", a.Raw)
	}
	if c := counterOf(t, h, "tok"); c != 812 {
		t.Fatalf("counter %d, want 812", c)
	}
	a = h.Expect(h.Do(http.MethodPost, url, map[string]any{"message": msg, "actualCost": 10}), http.StatusOK)
	if v := settled(t, a); v["duplicate"] != true || counterOf(t, h, "tok") != 812 {
		t.Fatalf("a second report changed something: %s, counter %d", a.Raw, counterOf(t, h, "tok"))
	}
	// A higher cost is charged now, above what was estimated.
	msg2 := relayed(t, h, "tok", "tx-2", 1000)
	a = h.Expect(h.Do(http.MethodPost, url, map[string]any{"message": msg2, "actualCost": 2500}), http.StatusOK)
	if v := settled(t, a); v["charged"] != 1500.0 || counterOf(t, h, "tok") != 812+2500 {
		t.Fatalf("debt: %s, counter %d", a.Raw, counterOf(t, h, "tok"))
	}
	// The graph view shows how good the estimates are.
	view := h.Expect(h.Do(http.MethodGet, h.GraphURL("tok"), nil), http.StatusOK)
	var g struct {
		Nodes []struct {
			Node   string
			Settle *struct {
				Settles, Estimated, Actual int64
				Ratio                      float64
			}
		}
	}
	if err := json.Unmarshal(view.Raw, &g); err != nil || len(g.Nodes) != 1 || g.Nodes[0].Settle == nil {
		t.Fatalf("view: %v %s", err, view.Raw)
	}
	if s := g.Nodes[0].Settle; s.Settles != 2 || s.Estimated != 5000 || s.Actual != 812+2500 {
		t.Fatalf("settle stats %+v", *s)
	}
}

// Forged, altered, copied or misdirected stamps and bad costs are refused
// with a code naming the field, and change nothing.
func TestSettleRefusesWhatNoRelayWrote(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("tok"), tokensTarget(h)), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("other"), tokensTarget(h)), http.StatusOK)
	url := h.GraphURL("tok") + "/nodes/tokens/settle"
	msg := relayed(t, h, "tok", "tx-1", 4000)
	before := counterOf(t, h, "tok")
	data := string(msg["data"].(json.RawMessage))
	with := func(d string) map[string]any {
		m := map[string]any{}
		for k, v := range msg {
			m[k] = v
		}
		m["data"] = json.RawMessage(d)
		return m
	}
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		field  string
	}{
		{"altered cost", map[string]any{"message": with(strings.Replace(data, `"cost":4000`, `"cost":9000`, 1)), "actualCost": 1}, 422, "invalid-stamp", "message.data._gate"},
		{"altered window", map[string]any{"message": with(strings.Replace(data, `"row":"claim"`, `"row":"claim2"`, 1)), "actualCost": 1}, 422, "invalid-stamp", "message.data._gate"},
		{"forged signature", map[string]any{"message": with(data[:strings.Index(data, `"sig":"`)+7] + "AAAAAAAAAAAAAAAAAAAAAA\"}}"), "actualCost": 1}, 422, "invalid-stamp", "message.data._gate"},
		{"another message's stamp", map[string]any{"message": map[string]any{"transactionId": "tx-9", "data": msg["data"]}, "actualCost": 1}, 422, "invalid-stamp", "message.data._gate"},
		{"no stamp", map[string]any{"message": with(`{"prompt":"hi"}`), "actualCost": 1}, 422, "invalid-stamp", "message.data._gate"},
		{"unsigned stamp", map[string]any{"message": with(`{"_gate":{"graph":"tok","path":"main","hop":1,"node":"tokens","at":1}}`), "actualCost": 1}, 422, "invalid-stamp", "message.data._gate"},
		{"negative cost", map[string]any{"message": msg, "actualCost": -5}, 422, "invalid-field", "actualCost"},
		{"fractional cost", map[string]any{"message": msg, "actualCost": 1.5}, 422, "invalid-field", "actualCost"},
		{"absurd cost", map[string]any{"message": msg, "actualCost": 1e12}, 422, "invalid-field", "actualCost"},
		{"NaN cost", map[string]any{"message": msg, "actualCost": "NaN"}, 422, "invalid-field", "actualCost"},
		{"no cost", map[string]any{"message": msg}, 422, "missing-field", "actualCost"},
		{"no message", map[string]any{"actualCost": 1}, 422, "missing-field", "message"},
		{"no transaction id", map[string]any{"message": map[string]any{"data": msg["data"]}, "actualCost": 1}, 422, "missing-field", "message.transactionId"},
		{"scalar data", map[string]any{"message": with(`"x"`), "actualCost": 1}, 422, "invalid-field", "message.data"},
		{"unknown member", map[string]any{"message": msg, "actualCost": 1, "extra": 1}, 422, "unknown-field", "extra"},
	}
	for _, c := range cases {
		a := h.Do(http.MethodPost, url, c.body)
		var e struct{ Code, Field, Error string }
		_ = json.Unmarshal(a.Raw, &e)
		if a.Status != c.status || e.Code != c.code || (c.field != "" && e.Field != c.field) {
			t.Errorf("%s: %d %s, want %d %s naming %s", c.name, a.Status, a.Raw, c.status, c.code, c.field)
		}
	}
	// The message settled on another graph, or at a node that did not
	// charge it, is unknown there.
	a := h.Do(http.MethodPost, h.GraphURL("other")+"/nodes/tokens/settle", map[string]any{"message": msg, "actualCost": 1})
	if a.Status != 422 || !strings.Contains(string(a.Raw), "unknown-message") {
		t.Errorf("another graph: %d %s", a.Status, a.Raw)
	}
	big := strings.Repeat("x", 2<<20)
	a = h.Do(http.MethodPost, url, map[string]any{"message": with(`{"p":"` + big + `"}`), "actualCost": 1})
	if a.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB body: %d, want 413", a.Status)
	}
	if c := counterOf(t, h, "tok"); c != before {
		t.Fatalf("a refused settle moved the counter: %d → %d", before, c)
	}
}
