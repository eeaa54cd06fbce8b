package load

import (
	"strings"
	"testing"
)

func rows(limits []int, phase int, perSecond func(sec, limit int) (ok, refused int)) []VendorRow {
	var out []VendorRow
	for p, l := range limits {
		for s := 0; s < phase; s++ {
			ok, refused := perSecond(p*phase+s, l)
			out = append(out, VendorRow{Second: p*phase + s, Phase: p, Limit: l, Calls: ok + refused, OK: ok, Refused: refused})
		}
	}
	return out
}

func TestJudgeVendorPassesAGateThatFollowsTheVendor(t *testing.T) {
	t.Parallel()
	// 50 in the first second (30 refused), 20 in the first second of the
	// 10/s phase (10 refused), the limit exactly otherwise.
	rs := rows([]int{20, 10}, 30, func(sec, limit int) (int, int) {
		switch sec {
		case 0:
			return 20, 30
		case 30:
			return 10, 10
		}
		return limit, 0
	})
	vr := JudgeVendor(rs, 50, 30, []int{20, 10})
	for _, g := range vendorGates(vr) {
		if !g.Pass {
			t.Errorf("gate %s failed: %s", g.Name, g.Detail)
		}
	}
	if vr.Refused != 40 || vr.Calls != 940 || vr.Phases[0].Judged != 27 || vr.Phases[1].Utilisation != 1 {
		t.Fatalf("report %+v", vr)
	}
}

func TestJudgeVendorFailsGateThatForwardsTheDeclaredRate(t *testing.T) {
	t.Parallel()
	// Today's Gate: 50 a second whatever the vendor says.
	rs := rows([]int{20, 10}, 30, func(_, limit int) (int, int) { return limit, 50 - limit })
	vr := JudgeVendor(rs, 50, 30, []int{20, 10})
	failed := map[string]bool{}
	for _, g := range vendorGates(vr) {
		failed[g.Name] = !g.Pass
	}
	if !failed["vendor 429s"] || failed["phase 1 used"] || failed["never above declared"] {
		t.Fatalf("gates %v, want only the 429 gate failed", failed)
	}
	// A relay that forwards above the declared rate fails the last gate; one
	// that pauses too long fails a phase.
	rs = rows([]int{20}, 10, func(sec, limit int) (int, int) {
		if sec == 5 {
			return limit, 40
		}
		if sec > 5 {
			return limit / 2, 0
		}
		return limit, 0
	})
	vr = JudgeVendor(rs, 50, 10, []int{20})
	var out strings.Builder
	for _, g := range vendorGates(vr) {
		if !g.Pass {
			out.WriteString(g.Name + ";")
		}
	}
	if out.String() != "vendor 429s;phase 1 used;never above declared;" {
		t.Fatalf("failed gates %q", out.String())
	}
}
