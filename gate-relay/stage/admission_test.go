package stage

import "testing"

// A relay that wants riders but has not probed yet says so: /health must
// not make it look like a relay configured for the separate path.
func TestAdmissionModeBeforeTheFirstProbe(t *testing.T) {
	if mode, why := NewAdmission(true, nil).Mode(); mode != "separate" || why != NotProbedYet {
		t.Fatalf("riders wanted, not probed: Mode() = %q, %q; want separate with %q", mode, why, NotProbedYet)
	}
	if mode, why := NewAdmission(false, nil).Mode(); mode != "separate" || why != "" {
		t.Fatalf("separate configured: Mode() = %q, %q; want separate with no reason", mode, why)
	}
	a := NewAdmission(true, nil)
	a.Off("the broker answered kv_disabled")
	if _, why := a.Mode(); why != "the broker answered kv_disabled" {
		t.Fatalf("after a switch the reason is the switch's, got %q", why)
	}
}
