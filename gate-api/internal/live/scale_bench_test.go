package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/provision"
	"github.com/queen-mq/gate/libs/store"
)

// scaleDoc is graph g{i}: the two-node graph (an ingress node with a
// per-second budget, an egress node with a ten-second one, one path).
func scaleDoc(app string, i int) []byte {
	return fmt.Appendf(nil, `{"version":1,"nodes":{"api":{"ingress":true,"budgets":[{"id":"rate","count":100,"timeMs":1000}]},`+
		`"ip":{"budgets":[{"id":"ip","count":1000,"timeMs":10000,"subWindows":10}],"egress":%q}},`+
		`"paths":[{"name":"main","nodes":["api","ip"]}]}`, app+".g"+strconv.Itoa(i)+".out")
}

// statusGraphsPerRow is how many graphs one published relay status row
// carries in the fill: far below the broker's 64 KiB kv value limit.
const statusGraphsPerRow = 50

// fillCatalogue declares graphs g{from}..g{to-1} of h.App straight into
// gate-api's catalogue (compiled as a PUT compiles them), provisions their
// queues on the broker as a PUT does, and publishes relay status rows that
// run every one of them with non-zero counters. It skips the PUT route:
// declaring 10,000 graphs through it is measured on its own
// (BenchmarkDeclareThroughPUT).
func fillCatalogue(b *testing.B, h *apitest.Harness, from, to int) {
	b.Helper()
	ctx := context.Background()
	p := h.Plane()
	opts := p.Cfg.PlanOptions()
	var row store.RelayStatus
	flush := func() {
		if len(row.Graphs) == 0 {
			return
		}
		row.At = time.Now().UnixMilli()
		if err := h.Store.PutStatus(ctx, row, time.Hour); err != nil {
			b.Fatal(err)
		}
		row.Graphs = nil
	}
	for i := from; i < to; i++ {
		name := "g" + strconv.Itoa(i)
		e := plane.CompileStored(h.App, name, scaleDoc(h.App, i), false, opts)
		if e.Plan == nil {
			b.Fatalf("%s does not compile: %s", name, e.Problem)
		}
		if err := provision.Queues(ctx, h.Client, e.Plan, provision.Options{LeaseSeconds: 10, RetryLimit: 3}); err != nil {
			b.Fatal(err)
		}
		p.Cat.Put(e)
		gs := store.GraphStatus{App: h.App, Graph: name, Version: int64(e.Plan.Version), Running: true}
		for _, st := range e.Plan.Stages {
			gs.Stages = append(gs.Stages, store.StageStatus{Path: st.Path, Node: st.Node, Hop: st.Hop, Source: st.Source, Group: st.Group,
				Counters: store.Counters{Popped: int64(i + 10), Admitted: int64(i + 9), Forwarded: int64(i + 9), Commits: 3, Deferred: int64(i % 3)}})
		}
		if row.Replica == "" {
			row.Replica = "fill-" + strconv.Itoa(i/statusGraphsPerRow)
		}
		row.Graphs = append(row.Graphs, gs)
		if len(row.Graphs) == statusGraphsPerRow {
			flush()
			row.Replica = ""
		}
	}
	flush()
	if err := p.Cat.SyncStatus(ctx); err != nil {
		b.Fatal(err)
	}
}

// get answers one GET of path with status 200 and returns the body's size.
func get(b *testing.B, client *http.Client, url string) int {
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s answered %d", url, resp.StatusCode)
	}
	return int(n)
}

// BenchmarkConsoleLists measures, in one process against the harness's
// miniqueen, one request of each console list route and the overview at
// 1, 100, 1,000 and 10,000 declared two-node graphs, each run by a relay
// that publishes counters. The server's clock is virtual and moves 3 s
// between requests (the console polls every 5 s), so the 1 s broker health
// cache and the 2 s depth cache are cold on every request, as they are
// for a console polling its page ("overview-still" keeps it still: the
// requests of other consoles within the same seconds). Besides ns/op it reports the answer's
// size (bytes/answer) and the latency percentiles.
//
//	GATE_TEST_REQUIRE_LIVE=1 go test -run '^$' -bench BenchmarkConsoleLists -benchtime 20x ./gate-api/internal/live
//
// GATE_BENCH_GRAPHS=1,100 picks the sizes.
func BenchmarkConsoleLists(b *testing.B) {
	sizes := []int{1, 100, 1000, 10000}
	if s := os.Getenv("GATE_BENCH_GRAPHS"); s != "" {
		sizes = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("GATE_BENCH_GRAPHS=%q: give sizes like 1,100,1000", s)
			}
			sizes = append(sizes, n)
		}
	}
	vc := clock.NewVirtual(time.Now())
	h := apitest.NewWith(b, apitest.Setup{Clock: vc, Config: func(c *config.Config) {
		// The fill is the only writer; no timer re-reads kv under the
		// measurement, and no request meets the broker deadline.
		c.Refresh = time.Hour
		c.BrokerTimeout = 10 * time.Minute
	}})
	client := &http.Client{}
	have := 0
	for _, n := range sizes {
		if n > have {
			fillCatalogue(b, h, have, n)
			have = n
		}
		mid := "g" + strconv.Itoa(n/2)
		routes := []struct {
			name, path string
			// still keeps the clock still between requests (a second
			// console polling within the same seconds).
			still bool
		}{
			{"overview", "/api/overview", false},
			{"overview-still", "/api/overview", true},
			{"targets", "/api/targets", false},
			{"graphs", "/api/graphs", false},
			{"apps", "/api/apps", false},
			// A search matching one graph in ten (g1, g1x, g1xx, …) and a
			// page from the middle: on a server without paging they are the
			// whole list again.
			{"targets-q", "/api/targets?q=g1", false},
			{"graphs-middle", "/api/graphs?cursor=" + middleCursor(b, h, client, mid), false},
		}
		for _, rt := range routes {
			b.Run(fmt.Sprintf("graphs=%d/%s", n, rt.name), func(b *testing.B) {
				url := h.URL + rt.path
				lat := make([]time.Duration, 0, b.N)
				size := 0
				for b.Loop() {
					if !rt.still {
						b.StopTimer()
						vc.Advance(3 * time.Second)
						b.StartTimer()
					}
					t0 := time.Now()
					size = get(b, client, url)
					lat = append(lat, time.Since(t0))
				}
				slices.Sort(lat)
				pct := func(p float64) float64 { return float64(lat[int(float64(len(lat)-1)*p)].Microseconds()) / 1000 }
				b.ReportMetric(pct(0.5), "p50-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
				b.ReportMetric(float64(size), "bytes/answer")
			})
		}
	}
}

// BenchmarkDeclareThroughPUT declares two-node graphs one after another
// through PUT (GATE_DECLARE_WAIT_MS=0, no relay) and reports the PUT
// latency percentiles of each tenth of them, so its growth with the number
// already declared shows: the first tenth's p50 against the last tenth's.
//
//	GATE_TEST_REQUIRE_LIVE=1 GATE_BENCH_PUTS=1000 go test -run '^$' -bench BenchmarkDeclareThroughPUT -benchtime 1x ./gate-api/internal/live
func BenchmarkDeclareThroughPUT(b *testing.B) {
	n := 1000
	if s := os.Getenv("GATE_BENCH_PUTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 10 {
			b.Fatalf("GATE_BENCH_PUTS=%q: give a number of graphs of at least 10", s)
		}
		n = v
	}
	for range b.N {
		b.StopTimer()
		h := apitest.New(b)
		client := &http.Client{}
		lat := make([]time.Duration, 0, n)
		b.StartTimer()
		for i := range n {
			req, err := http.NewRequest(http.MethodPut, h.URL+h.GraphURL("g"+strconv.Itoa(i)), strings.NewReader(string(scaleDoc(h.App, i))))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("PUT g%d answered %d: %.300s", i, resp.StatusCode, body)
			}
		}
		b.StopTimer()
		tenth := n / 10
		for k := 0; k < 10; k += 9 {
			part := slices.Clone(lat[k*tenth : (k+1)*tenth])
			slices.Sort(part)
			pct := func(p float64) float64 { return float64(part[int(float64(len(part)-1)*p)].Microseconds()) / 1000 }
			b.ReportMetric(pct(0.5), fmt.Sprintf("p50-ms-tenth%d", k+1))
			b.ReportMetric(pct(0.99), fmt.Sprintf("p99-ms-tenth%d", k+1))
		}
		all := slices.Clone(lat)
		slices.Sort(all)
		var total time.Duration
		for _, d := range all {
			total += d
		}
		b.ReportMetric(total.Seconds(), "s-total")
		b.ReportMetric(float64(all[int(float64(len(all)-1)*0.99)].Microseconds())/1000, "p99-ms")
	}
}

// middleCursor is the cursor of the page after the one that shows graph
// name, found by walking /api/graphs 200 rows at a time. On a server
// without paging (an array answer) there is none, and the route answers
// its whole list.
func middleCursor(b *testing.B, h *apitest.Harness, client *http.Client, name string) string {
	b.Helper()
	cursor := ""
	for range 1000 {
		resp, err := client.Get(h.URL + "/api/graphs?limit=200&cursor=" + cursor)
		if err != nil {
			b.Fatal(err)
		}
		var page struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
			Next *string `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || page.Next == nil {
			return "" // no paging, or name is on the last page
		}
		cursor = *page.Next
		for _, it := range page.Items {
			if it.Name == name {
				return cursor
			}
		}
	}
	return ""
}
