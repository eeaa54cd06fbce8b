package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// pushBacklog pushes n items onto queue, so that many wait for the stages
// that read it.
func pushBacklog(h *apitest.Harness, queue string, n int) {
	h.T.Helper()
	items := make([]queen.PushItem, n)
	for i := range items {
		items[i] = queen.PushItem{Queue: queue, Partition: "p0", Payload: json.RawMessage(`{}`)}
	}
	if _, err := h.Client.Push(context.Background(), items); err != nil {
		h.T.Fatal(err)
	}
}

func productMetrics(h *apitest.Harness) wire.ProductMetrics {
	h.T.Helper()
	a := h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/metrics", nil), http.StatusOK)
	var m wire.ProductMetrics
	if err := json.Unmarshal(a.Raw, &m); err != nil {
		h.T.Fatalf("decoding the product metrics: %v in %.300s", err, a.Raw)
	}
	return m
}

// metricsTarget finds one target of a metrics answer.
func metricsTarget(t *testing.T, m wire.ProductMetrics, name string) wire.MetricsTarget {
	t.Helper()
	for _, tg := range m.Targets {
		if tg.Name == name {
			return tg
		}
	}
	t.Fatalf("metrics have no target %s: %+v", name, m.Targets)
	return wire.MetricsTarget{}
}

func metricsPath(t *testing.T, tg wire.MetricsTarget, name string) wire.MetricsPath {
	t.Helper()
	for _, p := range tg.Paths {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("target %s has no path %s: %+v", tg.Name, name, tg.Paths)
	return wire.MetricsPath{}
}

func show[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func sameFloat(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sameInt(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// The oracle of gate-runtime §3.9, written from the spec's words.
//
// specRate: the last complete minute's admitted / 60, else the filling
// minute's admitted / max(5, elapsed seconds), else 0.
func specRate(rows []history.RollupCount, app, target, lane string, now time.Time) float64 {
	fill := now.Truncate(time.Minute)
	last := fill.Add(-time.Minute)
	var inLast, inFill int64
	var hasLast, hasFill bool
	for _, r := range rows {
		if r.App != app || r.Target != target || r.Lane != lane {
			continue
		}
		switch r.Minute {
		case last.UnixMilli():
			inLast, hasLast = inLast+r.Admitted, true
		case fill.UnixMilli():
			inFill, hasFill = inFill+r.Admitted, true
		}
	}
	switch {
	case hasLast:
		return float64(inLast) / 60
	case hasFill:
		return float64(inFill) / math.Max(5, now.Sub(fill).Seconds())
	}
	return 0
}

// specETA: 0 if nothing waits, ceil(waiting / rate) if rate > 0, else null.
func specETA(waiting int64, rate *float64) *int64 {
	if waiting == 0 {
		v := int64(0)
		return &v
	}
	if rate != nil && *rate > 0 {
		v := int64(math.Ceil(float64(waiting) / *rate))
		return &v
	}
	return nil
}

// GET /v1/apps/{app}/metrics with history (gate-runtime §3.9): each path
// of a node has the admitted rate of its own minute roll-ups, the node the
// sum over its paths, and each backlog the drain ETA that rate gives. A
// graph without counters, another application's rows and minutes no rule
// reads do not count; closed history makes every rate null.
func TestProductMetricsAdmittedRate(t *testing.T) {
	t.Parallel()
	// 12:34:30 on a fixed day: the filling minute began 30 s ago.
	filling := time.Date(2026, 3, 2, 12, 34, 0, 0, time.UTC)
	clk := clock.NewVirtual(filling.Add(30 * time.Second))
	h := apitest.NewWith(t, apitest.Setup{Clock: clk})
	db := h.WithHistory(t)

	withCounters := func(d map[string]any) map[string]any {
		d["counters"] = map[string]any{"windowSeconds": 60}
		return d
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), withCounters(h.Airbnb(2))), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/solo", withCounters(h.Target("solo", 10))), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/quiet", h.Target("quiet", 10)), http.StatusOK)

	// Known backlogs: 7 on ip's interior queue (both of its paths read
	// it, each in its own group), 5 before prices, 3 before photos, 2
	// before quiet's node; solo waits for nothing.
	backlog := map[string]int64{"ip": 7, "prices": 5, "photos": 3}
	pushBacklog(h, plan.InteriorQueue(h.App, "airbnb", "ip"), 7)
	pushBacklog(h, h.Ingress("airbnb", "prices"), 5)
	pushBacklog(h, h.App+".airbnb.photos.in", 3)
	pushBacklog(h, h.Ingress("quiet", "limit"), 2)

	last, older := filling.Add(-time.Minute).UnixMilli(), filling.Add(-2*time.Minute).UnixMilli()
	roll := func(app, target, lane string, minute, admitted int64) history.RollupCount {
		return history.RollupCount{Recorder: "r-" + target + "-" + lane, App: app, Target: target, Lane: lane, Minute: minute, Admitted: admitted}
	}
	rows := []history.RollupCount{
		// ip, path prices: 120 in the last complete minute; its filling
		// minute's 900 is not read while the last minute has a row.
		roll(h.App, "airbnb.ip", "prices", last, 120),
		roll(h.App, "airbnb.ip", "prices", filling.UnixMilli(), 900),
		// ip, path photos: only its filling minute, 45 items so far.
		roll(h.App, "airbnb.ip", "photos", filling.UnixMilli(), 45),
		// prices: 90 in the last minute.
		roll(h.App, "airbnb.prices", "prices", last, 90),
		// photos: only a minute older than the last, which no rule reads.
		roll(h.App, "airbnb.photos", "photos", older, 6000),
		// solo: 30 in the last minute.
		roll(h.App, "solo.limit", "main", last, 30),
		// quiet has no counters: its rows give it no rate.
		roll(h.App, "quiet.limit", "main", last, 600),
		// Another application's graph of the same name is not this one.
		roll("b"+h.App, "airbnb.ip", "prices", last, 6000),
	}
	if err := db.Write(t.Context(), history.Batch{Rollups: rows}); err != nil {
		t.Fatal(err)
	}

	check := func(why string) {
		t.Helper()
		m := productMetrics(h)
		for _, c := range []struct{ graph, node string }{{"airbnb", "ip"}, {"airbnb", "prices"}, {"airbnb", "photos"}, {"solo", "limit"}} {
			tg := metricsTarget(t, m, c.graph+"."+c.node)
			var total float64
			for _, p := range tg.Paths {
				want := specRate(rows, h.App, tg.Name, p.Name, clk.Now())
				if p.WaitingForBudget != backlog[c.node] {
					t.Fatalf("%s: %s path %s waits %d, want the %d pushed", why, tg.Name, p.Name, p.WaitingForBudget, backlog[c.node])
				}
				if !sameFloat(p.AdmittedPerSec, &want) || !sameInt(p.DrainETASeconds, specETA(p.WaitingForBudget, &want)) {
					t.Fatalf("%s: %s path %s admitted_per_sec %s drain_eta_seconds %s, want %v and %s",
						why, tg.Name, p.Name, show(p.AdmittedPerSec), show(p.DrainETASeconds), want, show(specETA(p.WaitingForBudget, &want)))
				}
				total += want
			}
			// The node's backlog counts its one source queue once, however
			// many paths' groups read it (ip: prices and photos both see
			// the 7 items in ip's interior queue; 7 wait, not 14).
			waiting := backlog[c.node]
			if tg.WaitingForBudget != waiting || !sameFloat(tg.AdmittedPerSec, &total) || !sameInt(tg.DrainETASeconds, specETA(waiting, &total)) {
				t.Fatalf("%s: %s waits %d at %s/s, drain_eta_seconds %s; want %d (its queue once) at %v/s (Σ over its paths), %s",
					why, tg.Name, tg.WaitingForBudget, show(tg.AdmittedPerSec), show(tg.DrainETASeconds), waiting, total, show(specETA(waiting, &total)))
			}
		}
		q := metricsTarget(t, m, "quiet.limit")
		if q.AdmittedPerSec != nil || q.Paths[0].AdmittedPerSec != nil || q.DrainETASeconds != nil || q.Paths[0].DrainETASeconds != nil || q.WaitingForBudget != 2 {
			t.Fatalf("%s: quiet (no counters) waits %d at %s/s (path %s/s), drain %s s (path %s s); want 2 waiting, null rates and null drain ETAs",
				why, q.WaitingForBudget, show(q.AdmittedPerSec), show(q.Paths[0].AdmittedPerSec), show(q.DrainETASeconds), show(q.Paths[0].DrainETASeconds))
		}
	}

	// The figures the oracle must give, stated once by hand so a wrong
	// oracle cannot pass: ip 2/s + 1.5/s = 3.5/s draining the 7 items of
	// its one queue (both paths' groups see them) in 2 s.
	ip := metricsTarget(t, productMetrics(h), "airbnb.ip")
	if !sameFloat(ip.AdmittedPerSec, new(3.5)) || ip.WaitingForBudget != 7 || !sameInt(ip.DrainETASeconds, new(int64(2))) ||
		!sameInt(metricsPath(t, ip, "photos").DrainETASeconds, new(int64(5))) {
		t.Fatalf("ip waits %d at %s/s, drain %s s, path photos %s s; want 7 at 3.5/s, 2 s to drain them, path photos 5 s to drain 7 at 1.5/s",
			ip.WaitingForBudget, show(ip.AdmittedPerSec), show(ip.DrainETASeconds), show(metricsPath(t, ip, "photos").DrainETASeconds))
	}
	if ph := metricsTarget(t, productMetrics(h), "airbnb.photos"); !sameFloat(ph.AdmittedPerSec, new(0.0)) || ph.DrainETASeconds != nil {
		t.Fatalf("photos at %s/s, drain %s s; want rate 0 (no row in the minutes read) and an unknown drain ETA", show(ph.AdmittedPerSec), show(ph.DrainETASeconds))
	}
	check("30 s into the minute")

	// Two seconds into the minute the filling minute is divided by 5, not 2.
	clk.Set(filling.Add(2 * time.Second))
	if p := metricsPath(t, metricsTarget(t, productMetrics(h), "airbnb.ip"), "photos"); !sameFloat(p.AdmittedPerSec, new(9.0)) {
		t.Fatalf("2 s into the minute: ip path photos at %s/s, want 45/5 = 9", show(p.AdmittedPerSec))
	}
	check("2 s into the minute")

	// History unreadable: no rate anywhere, a drain ETA only where nothing waits.
	db.Close()
	m := productMetrics(h)
	for _, tg := range m.Targets {
		for _, p := range tg.Paths {
			if p.AdmittedPerSec != nil || !sameInt(p.DrainETASeconds, specETA(p.WaitingForBudget, nil)) {
				t.Fatalf("history closed: %s path %s at %s/s, drain %s s; want a null rate", tg.Name, p.Name, show(p.AdmittedPerSec), show(p.DrainETASeconds))
			}
		}
		if tg.AdmittedPerSec != nil || !sameInt(tg.DrainETASeconds, specETA(tg.WaitingForBudget, nil)) {
			t.Fatalf("history closed: %s at %s/s, drain %s s; want a null rate", tg.Name, show(tg.AdmittedPerSec), show(tg.DrainETASeconds))
		}
	}
}

// Without history the product metrics have no admitted rate even for a
// graph with counters on, and a drain ETA only where nothing waits.
func TestProductMetricsWithoutHistory(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	doc := h.Airbnb(2)
	doc["counters"] = map[string]any{"windowSeconds": 60}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), doc), http.StatusOK)
	pushBacklog(h, h.Ingress("airbnb", "prices"), 4)
	m := productMetrics(h)
	if len(m.Targets) != 3 {
		t.Fatalf("%d targets, want airbnb's three nodes: %+v", len(m.Targets), m.Targets)
	}
	for _, tg := range m.Targets {
		wantETA := specETA(tg.WaitingForBudget, nil)
		if tg.AdmittedPerSec != nil || !sameInt(tg.DrainETASeconds, wantETA) {
			t.Fatalf("no history: %s admitted_per_sec %s drain_eta_seconds %s, want null and %s",
				tg.Name, show(tg.AdmittedPerSec), show(tg.DrainETASeconds), show(wantETA))
		}
		for _, p := range tg.Paths {
			if p.AdmittedPerSec != nil || !sameInt(p.DrainETASeconds, specETA(p.WaitingForBudget, nil)) {
				t.Fatalf("no history: %s path %s at %s/s, drain %s s; want a null rate", tg.Name, p.Name, show(p.AdmittedPerSec), show(p.DrainETASeconds))
			}
		}
	}
	if p := metricsTarget(t, m, "airbnb.prices"); p.WaitingForBudget != 4 || p.DrainETASeconds != nil {
		t.Fatalf("no history: prices waits %d, drain %s s; want 4 waiting with an unknown drain ETA", p.WaitingForBudget, show(p.DrainETASeconds))
	}
	if p := metricsTarget(t, m, "airbnb.photos"); p.WaitingForBudget != 0 || !sameInt(p.DrainETASeconds, new(int64(0))) {
		t.Fatalf("no history: photos waits %d, drain %s s; want nothing waiting and a drain ETA of 0", p.WaitingForBudget, show(p.DrainETASeconds))
	}
}

// A queue two paths read at one node is counted once in the node's
// waiting_for_budget — in the graph view, the product metrics and the
// console's graph list — though each path's group sees all its items; the
// ETA of one path says its number holds the other path's items too.
func TestASharedQueueIsCountedOnceAtItsNode(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(1)), http.StatusOK)
	h.Run("relay-1", "airbnb", 1)
	pushBacklog(h, plan.InteriorQueue(h.App, "airbnb", "ip"), 7)

	view := apitest.DecodeAs[wire.GraphView](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("airbnb"), nil), http.StatusOK))
	n, _ := view.Node("ip")
	if n.WaitingForBudget != 7 {
		t.Errorf("graph view: ip waits %d, want the 7 items of its queue (both paths' groups see them)", n.WaitingForBudget)
	}
	for _, st := range view.Stages {
		if st.Node == "ip" && (st.Lag == nil || *st.Lag != 7) {
			t.Errorf("graph view: stage %s at ip lags %v, want 7 (its group's backlog)", st.Path, apitest.Deref(st.Lag))
		}
	}
	if ip := metricsTarget(t, productMetrics(h), "airbnb.ip"); ip.WaitingForBudget != 7 || ip.State != "pacing" {
		t.Errorf("product metrics: ip waits %d (%s), want 7", ip.WaitingForBudget, ip.State)
	}
	page := apitest.DecodeAs[wire.GraphPage](t, h.Expect(h.Do(http.MethodGet, "/api/graphs", nil), http.StatusOK))
	if len(page.Items) == 0 {
		t.Fatal("/api/graphs listed no graph")
	}
	for _, r := range page.Items {
		for _, gn := range r.Nodes {
			if r.Name == "airbnb" && gn.Name == "ip" && gn.WaitingForBudget != 7 {
				t.Errorf("/api/graphs: ip waits %d, want 7", gn.WaitingForBudget)
			}
		}
	}
	eta := h.Expect(h.Do(http.MethodGet, h.GraphURL("airbnb")+"/nodes/ip/eta?path=photos", nil), http.StatusOK)
	if eta.Num("waitingForBudget") != 7 || !strings.Contains(eta.Str("assumes"), "paths prices read the same queue at this node") {
		t.Errorf("ETA of photos at ip: %s; want 7 waiting and an assumption naming prices", eta.Raw)
	}
}
