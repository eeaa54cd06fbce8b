package load

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestReportsNameEveryGateAndTheBound(t *testing.T) {
	t.Parallel()
	r := Judge(paced(12, 25, 25, 600, 2400), params)
	r.Graph = "load-1"
	cfg := Config{Scenario: ScenarioLoad, App: "default", Total: 3000, Seconds: 12}
	var text bytes.Buffer
	WriteText(&text, cfg, r)
	for _, want := range []string{"ceiling held", "throughput reached", "reserve held", "110%", "the most fixed sub-windows can allow", "== PASS"} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, cfg, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Graph string `json:"graph"`
		Pass  bool   `json:"pass"`
		Gates []Gate `json:"gates"`
		Rows  []Row  `json:"rows"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Graph != "load-1" || !back.Pass || len(back.Gates) != 3 || len(back.Rows) != 12 {
		t.Fatalf("JSON summary = %+v", back)
	}
}
