package insight_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

// minutes has one rule on every route that takes it — timeline, GET and
// POST simulate, roll-ups and flow: a whole number outside the route's
// range is clamped into it (and the answer covers the clamped range), and
// anything that is not one whole number is 422 naming minutes.
func TestMinutesIsClampedOnEveryRoute(t *testing.T) {
	t.Parallel()
	// The server's clock stands still mid-second, so every route reads
	// the same until, and the recorder has handed over through that
	// moment: a replay covers exactly the clamped minutes.
	now := time.Now().Truncate(time.Second).Add(300 * time.Millisecond)
	h := apitest.NewWith(t, apitest.Setup{Clock: clock.NewVirtual(now)})
	db := h.WithHistory(t)
	until := now.UnixMilli() / 60000 * 60000
	session := now.Add(-48 * time.Hour).UnixMilli()
	doc := watchDoc(h, session)
	doc["watch"] = map[string]any{"durationSeconds": 2_592_000, "startedAt": session}
	storeDoc(h, t, "sim", doc)
	h.Run("relay-1", "sim", 1)
	record(h, t, db, "sim", "limit", "main", "r1", session, session, now.UnixMilli(), 0, [3]int64{now.UnixMilli()/1000*1000 - 30_000, 2, 2})
	if err := db.Write(t.Context(), history.Batch{Rollups: []history.RollupCount{
		{Recorder: "r", App: h.App, Target: "sim.limit", Lane: "main", Minute: until - 3*60000, Admitted: 5, Cost: 5},
		{Recorder: "r", App: h.App, Target: "sim.limit", Lane: "main", Minute: until - 2000*60000, Admitted: 9, Cost: 9},
	}}); err != nil {
		t.Fatal(err)
	}
	base := "/api/apps/" + h.App + "/graphs/sim"
	cases := []struct {
		raw    string
		lo, hi int // what the clamp gives on the routes whose range is 1..1440 / timeline's 5..1440
		tlMins int
	}{
		{"0", 1, 1, 5},
		{"-7", 1, 1, 5},
		{"99999", 1440, 1440, 1440},
		{"99999999999999999999", 1440, 1440, 1440},
	}
	for _, c := range cases {
		q := "minutes=" + url.QueryEscape(c.raw)
		tl := apitest.DecodeAs[wire.Timeline](t, h.Expect(h.Do(http.MethodGet, base+"/timeline?"+q, nil), http.StatusOK))
		if tl.Minutes != c.tlMins || tl.Since != tl.Until-int64(c.tlMins)*60000 {
			t.Errorf("timeline %s: minutes %d over [%d, %d), want %d", q, tl.Minutes, tl.Since, tl.Until, c.tlMins)
		}
		sim := apitest.DecodeAs[wire.Simulation](t, h.Expect(h.Do(http.MethodGet, base+"/simulate?node=limit&count=100&timeMs=1000&"+q, nil), http.StatusOK))
		if got := replayedMinutes(sim.Coverage); got != int64(c.lo) {
			t.Errorf("GET simulate %s: replays %d minutes, want %d", q, got, c.lo)
		}
		gs := apitest.DecodeAs[wire.GraphSimulation](t, h.Expect(h.Do(http.MethodPost, base+"/simulate?"+q, doc), http.StatusOK))
		if got := replayedMinutes(gs.Coverage); got != int64(c.lo) {
			t.Errorf("POST simulate %s: replays %d minutes, want %d", q, got, c.lo)
		}
		flow := apitest.DecodeAs[wire.Flow](t, h.Expect(h.Do(http.MethodGet, "/api/flow?"+q, nil), http.StatusOK))
		if len(flow.Minutes) != c.hi {
			t.Errorf("flow %s: %d minutes, want %d", q, len(flow.Minutes), c.hi)
		}
		rows := apitest.DecodeAs[[]wire.RollupMinute](t, h.Expect(h.Do(http.MethodGet, "/api/rollups?target="+h.App+"/sim.limit&"+q, nil), http.StatusOK))
		want := 0 // the minute 3 minutes back is outside one minute
		if c.hi == 1440 {
			want = 1 // inside a day; the one 2,000 minutes back is not
		}
		if len(rows) != want {
			t.Errorf("roll-ups %s: %d minutes %+v, want %d", q, len(rows), rows, want)
		}
	}
	for _, bad := range []string{"soon", "1.5", "1e3", "5&minutes=6"} {
		for _, path := range []string{base + "/timeline", base + "/simulate?node=limit&count=100&timeMs=1000", "/api/flow", "/api/rollups?target=sim.limit"} {
			sep := "?"
			if len(path) > 0 && containsByte(path, '?') {
				sep = "&"
			}
			a := h.Expect(h.Do(http.MethodGet, path+sep+"minutes="+bad, nil), http.StatusUnprocessableEntity)
			if a.Str("field") != "minutes" || a.Str("code") != "invalid-query" {
				t.Errorf("%s minutes=%s: %s, want 422 invalid-query naming minutes", path, bad, a.Raw)
			}
		}
		a := h.Expect(h.Do(http.MethodPost, base+"/simulate?minutes="+bad, doc), http.StatusUnprocessableEntity)
		if a.Str("field") != "minutes" {
			t.Errorf("POST simulate minutes=%s: %s", bad, a.Raw)
		}
	}
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// replayedMinutes is a simulation's coverage in whole minutes; -1 when the
// coverage is not a whole number of minutes (a second dropped or added at
// either end).
func replayedMinutes(c wire.Coverage) int64 {
	if (c.Until-c.Since)%60_000 != 0 {
		return -1
	}
	return (c.Until - c.Since) / 60_000
}
