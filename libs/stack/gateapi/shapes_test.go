package gateapi

import (
	"encoding/json"
	"testing"
)

func TestViewStageCountersDecodeFromTheRelayShape(t *testing.T) {
	t.Parallel()
	body := `{"path":"fast","node":"ip","hop":1,"lag":7,"counters":{"popped":10,"admitted":8,"deferred":1,"parked":2,"released":3,"forwarded":8,"commits":2,"duplicates":0,"foreign":0,"deadlettered":0,"leaked":0,"wedged":0,"costAdmitted":8}}`
	var st ViewStage
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if st.Counters.Forwarded != 8 || st.Counters.Popped != 10 || st.Lag == nil || *st.Lag != 7 {
		t.Fatalf("decoded %+v", st)
	}
	if got := st.Counters.Refusals(); got != 6 {
		t.Fatalf("refusals = %d, want deferred+parked+released = 6", got)
	}
}
