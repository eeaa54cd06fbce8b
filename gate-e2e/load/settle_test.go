package load

import "testing"

// `vendor settle` parses as the vendor scenario's settle variant, and its
// judge holds every window but the first and the last to 85% of the count
// in actual cost and every window's counter to the count.
func TestVendorSettleParsesAndJudges(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]string{"vendor", "settle"}, func(k string) string {
		if k == "GATE_E2E_SETTLE" {
			return "0"
		}
		return ""
	})
	if err != nil || cfg.Scenario != ScenarioVendor || !cfg.VendorSettle || cfg.SettleReports {
		t.Fatalf("parsed %+v, %v", cfg, err)
	}
	sr := SettleReport{Count: 1000, Windows: []SettleWindow{
		{End: 1, Actual: 100, MaxCounter: 1000}, {End: 2, Actual: 900, MaxCounter: 1000}, {End: 3, Actual: 860, MaxCounter: 990}, {End: 4, Actual: 10},
	}}
	JudgeSettle(&sr)
	gs := settleGates(sr)
	if !sr.Windows[1].Judged || sr.Windows[0].Judged || sr.Windows[3].Judged || !gs[0].Pass || !gs[1].Pass {
		t.Fatalf("judged %+v gates %+v", sr.Windows, gs)
	}
	sr.Windows[2].Actual, sr.Windows[1].MaxCounter = 840, 1001
	JudgeSettle(&sr)
	gs = settleGates(sr)
	if gs[0].Pass || gs[1].Pass {
		t.Fatalf("a window at 84%% or a counter over its count passed: %+v", gs)
	}
}
