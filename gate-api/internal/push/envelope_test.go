package push

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestEnvelope(t *testing.T) {
	t.Parallel()
	st := stamp{graph: "g", node: "n", at: 7}
	gate := map[string]any{"graph": "g", "node": "n", "hop": float64(0), "at": float64(7)}
	cases := []struct {
		name     string
		payload  string
		op       string
		cost     int64
		costPath string
		want     map[string]any
	}{
		{"absent payload", "", "", 0, "", map[string]any{"_gate": gate}},
		{"empty object", "{ }", "", 0, "", map[string]any{"_gate": gate}},
		{"fields kept", `{"a":1,"b":[2]}`, "", 0, "", map[string]any{"a": float64(1), "b": []any{float64(2)}, "_gate": gate}},
		{"forged stamp overwritten", `{"_gate":{"graph":"evil","hop":9}}`, "", 0, "", map[string]any{"_gate": gate}},
		{"op added", `{"a":1}`, "x.y", 0, "", map[string]any{"a": float64(1), "op": "x.y", "_gate": gate}},
		{"op replaced", `{"op":"old"}`, "new", 0, "", map[string]any{"op": "new", "_gate": gate}},
		{"op kept when none sent", `{"op":"old"}`, "", 0, "", map[string]any{"op": "old", "_gate": gate}},
		{"v1 cost written at a nested path", `{"a":1}`, "", 4, "payload.m.units", map[string]any{"a": float64(1), "m": map[string]any{"units": float64(4)}, "_gate": gate}},
		{"v1 cost never replaces a value", `{"units":2}`, "", 4, "payload.units", map[string]any{"units": float64(2), "_gate": gate}},
		{"v1 cost never replaces a non-object", `{"m":5}`, "", 4, "payload.m.units", map[string]any{"m": float64(5), "_gate": gate}},
		{"v1 cost ignored for a fixed cost", `{}`, "", 4, "", map[string]any{"_gate": gate}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var p json.RawMessage
			if c.payload != "" {
				p = json.RawMessage(c.payload)
			}
			out, err := envelope(p, c.op, c.cost, c.costPath, st)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("not JSON: %s", out)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %s, want %v", out, c.want)
			}
		})
	}
}
