package declare

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/queen-mq/gate/libs/plan"
)

func compileFile(t *testing.T, path string) *Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return compileT(t, Input{Body: b})
}

func budgetNamed(t *testing.T, p *plan.Plan, node, id string) plan.Budget {
	t.Helper()
	n := p.Node(node)
	if n == nil {
		t.Fatalf("no node %s", node)
	}
	for _, b := range n.Budgets {
		if b.ID == id {
			return b
		}
	}
	t.Fatalf("no budget %s.%s", node, id)
	return plan.Budget{}
}

// TestAirbnbFigures is gate-declare §10: the product description's document
// is accepted as written and compiles to the documented figures.
func TestAirbnbFigures(t *testing.T) {
	t.Parallel()
	res := compileFile(t, "testdata/golden/airbnb.in.json")
	if !res.Accepted() || res.Status() != 200 {
		t.Fatalf("the product description's document was refused: %v", res.Findings)
	}
	p := res.Plan
	type fig struct {
		node, id         string
		n, countSub, ttl int64
		key              string
		ceilings         map[string]int64
		scopeBy          string
		whenOp           []string
	}
	for _, f := range []fig{
		{"prices", "prices-1s", 1, 100, 1, "b:channel:airbnb:prices:prices-1s", map[string]int64{"prices": 100}, "", nil},
		{"photos", "photos-1m", 60, 5, 1, "b:channel:airbnb:photos:photos-1m", map[string]int64{"photos": 5}, "", nil},
		{"photos", "per-listing", 1, 100, 604800, "b:channel:airbnb:photos:per-listing", map[string]int64{"photos": 100}, "payload.listingId", []string{"photo.delete"}},
		{"ip", "ip-10s", 10, 150, 1, "b:channel:shared:egress-ip", map[string]int64{"photos": 75, "prices": 150}, "", nil},
	} {
		b := budgetNamed(t, p, f.node, f.id)
		if b.SubWindows != f.n || b.CountSub != f.countSub || b.WindowSubSeconds != f.ttl || b.Key != f.key || b.ScopeBy != f.scopeBy {
			t.Errorf("%s.%s = N %d, countSub %d, ttl %d, key %s, scope %q; want %+v", f.node, f.id, b.SubWindows, b.CountSub, b.WindowSubSeconds, b.Key, b.ScopeBy, f)
		}
		if len(b.Ceilings) != len(f.ceilings) {
			t.Errorf("%s.%s ceilings %v, want %v", f.node, f.id, b.Ceilings, f.ceilings)
		}
		for path, want := range f.ceilings {
			if b.Ceilings[path] != want {
				t.Errorf("%s.%s ceiling for %s = %d, want %d", f.node, f.id, path, b.Ceilings[path], want)
			}
		}
		if len(b.WhenOp) != len(f.whenOp) || (len(f.whenOp) > 0 && b.WhenOp[0] != f.whenOp[0]) {
			t.Errorf("%s.%s whenOp %v, want %v", f.node, f.id, b.WhenOp, f.whenOp)
		}
	}
	wantQueues := []plan.Queue{
		{Name: "channel.airbnb.photos.in", Kind: plan.KindIngressYours},
		{Name: "gate.channel.airbnb.prices.ingress", Kind: plan.KindIngress, OwnedByGate: true, Partitions: 16},
		{Name: "gate.channel.airbnb.ip.in", Kind: plan.KindInterior, OwnedByGate: true},
		{Name: "channel.airbnb.out", Kind: plan.KindEgress},
	}
	if len(p.Queues) != len(wantQueues) {
		t.Fatalf("queues %+v", p.Queues)
	}
	for i, q := range wantQueues {
		if p.Queues[i] != q {
			t.Errorf("queue %d = %+v, want %+v", i, p.Queues[i], q)
		}
	}
	type stage struct {
		path, node, source, group string
		share                     float64
		batch, workers            uint32
		foreign, owns, interior   bool
		label                     string
	}
	want := []stage{
		{"prices", "prices", "gate.channel.airbnb.prices.ingress", "gate.channel.airbnb.prices.prices", 1, 100, 1, false, true, false, "channel/airbnb/prices/ip"},
		{"prices", "ip", "gate.channel.airbnb.ip.in", "gate.channel.airbnb.prices.ip", 1, 150, 1, true, true, true, "channel/airbnb/prices/ip/out"},
		{"photos", "photos", "channel.airbnb.photos.in", "gate.channel.airbnb.photos.photos", 1, 5, 1, false, true, false, "channel/airbnb/photos/ip"},
		{"photos", "ip", "gate.channel.airbnb.ip.in", "gate.channel.airbnb.photos.ip", 0.5, 75, 1, true, false, true, "channel/airbnb/photos/ip/out"},
	}
	if len(p.Stages) != len(want) {
		t.Fatalf("%d stages, want %d", len(p.Stages), len(want))
	}
	for i, w := range want {
		s := p.Stages[i]
		got := stage{s.Path, s.Node, s.Source, s.Group, s.Share, s.Batch, s.Concurrency, s.ChecksForeign, s.OwnsUnstamped, s.SourceIsInterior, s.Destinations[0].Label}
		if got != w {
			t.Errorf("stage %d = %+v, want %+v", i, got, w)
		}
		if !s.Destinations[0].DerivesTransactionID {
			t.Errorf("stage %d does not derive a transaction id (converging or terminal)", i)
		}
	}
	ip := p.Node("ip")
	if ip.EgressQueue != "channel.airbnb.out" || ip.EgressGroup != "channel-workers" || ip.BreakerKey != "brk:channel:airbnb:ip" || ip.HTTPPush {
		t.Errorf("ip entry %+v", ip)
	}
	if ph := p.Node("photos"); ph.HTTPPush || ph.IngressQueue != "channel.airbnb.photos.in" {
		t.Errorf("photos entry %+v", ph)
	}
	if pr := p.Node("prices"); !pr.HTTPPush || pr.Cost.Path != "payload.rooms" || pr.Cost.Max != 50 {
		t.Errorf("prices entry %+v", pr)
	}
	if p.Namespace != "gate.channel" || p.MaxAttempts != 3 || p.CountersWindowSeconds != 0 || p.DocumentKey != "graph:channel:airbnb" {
		t.Errorf("plan header %+v", p)
	}
	if rules := res.Findings.Rules(); len(rules) != 1 || rules[0] != RuleWindowHeadOfLine {
		t.Errorf("offline findings %v, want only window-head-of-line", res.Findings)
	}
	// With the priority fix of §10.1 the figures are the same.
	var d map[string]any
	b, _ := os.ReadFile("testdata/golden/airbnb.in.json")
	_ = json.Unmarshal(b, &d)
	d["paths"].([]any)[1].(map[string]any)["priority"] = 1
	fixed := compileT(t, Input{Body: body(t, d)})
	if !fixed.Accepted() || budgetNamed(t, fixed.Plan, "ip", "ip-10s").Ceilings["photos"] != 75 {
		t.Errorf("the priority-1 variant: %v", fixed.Findings)
	}
}

// TestAirbnbBrokerWarnings is §10.6: the warnings that depend on the broker.
func TestAirbnbBrokerWarnings(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile("testdata/golden/airbnb.in.json")
	other := base()
	other["application"], other["graph"] = "channel", "vrbo"
	nodeOf(other, "in")["egress"] = "channel.airbnb.out"
	running := Stored{App: "channel", Name: "vrbo", Body: body(t, other), Running: true}
	cases := []struct {
		name  string
		facts facts
		want  []string // node order: ip, then photos
	}{
		{"queue missing", facts{}, []string{RuleEgressOwner, RuleIngressQueue, RuleWindowHeadOfLine}},
		{"queue with retention", facts{"channel.airbnb.photos.in": {Exists: true, Partitions: 4, RetentionSeconds: 600}}, []string{RuleEgressOwner, RuleIngressRetention, RuleWindowHeadOfLine}},
		{"queue of one partition", facts{"channel.airbnb.photos.in": {Exists: true, Partitions: 1}}, []string{RuleEgressOwner, RuleWindowHeadOfLine, RuleSinglePartition}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := compileT(t, Input{Body: b, Facts: tc.facts, Stored: []Stored{running}})
			if got := res.Findings.Rules(); !equalStrings(got, tc.want) {
				t.Errorf("rules %v, want %v", got, tc.want)
			}
			if len(res.Unchecked) != 0 {
				t.Errorf("unchecked %v with every fact given", res.Unchecked)
			}
			if res.Status() != 200 {
				t.Errorf("status %d", res.Status())
			}
		})
	}
}

// TestWorkedExamples is runtime §7.7: the assistant's four examples compile
// to their documented figures.
func TestWorkedExamples(t *testing.T) {
	t.Parallel()
	t.Run("notifications", func(t *testing.T) {
		res := compileFile(t, "testdata/golden/ai-notifications.in.json")
		if !res.Accepted() || len(res.Findings) != 0 {
			t.Fatalf("%v", res.Findings)
		}
		b := budgetNamed(t, res.Plan, "limit", "global")
		if b.CountSub != 100 || b.WindowSubSeconds != 1 || res.Plan.CountersWindowSeconds != 60 {
			t.Errorf("%+v", b)
		}
	})
	t.Run("partner-api", func(t *testing.T) {
		res := compileFile(t, "testdata/golden/ai-partner-api.in.json")
		if !res.Accepted() {
			t.Fatalf("%v", res.Findings)
		}
		if m := budgetNamed(t, res.Plan, "limit", "minute"); m.CountSub != 100 || m.WindowSubSeconds != 1 {
			t.Errorf("minute = %d per %ds, want 100 per 1s", m.CountSub, m.WindowSubSeconds)
		}
		w := budgetNamed(t, res.Plan, "limit", "account-writes")
		if w.ScopeBy != "payload.accountId" || len(w.WhenOp) != 1 || w.WhenOp[0] != "write.*" {
			t.Errorf("account-writes %+v", w)
		}
		n := res.Plan.Node("limit")
		if n.HTTPPush || n.EgressGroup != "partner-workers" {
			t.Errorf("node %+v", n)
		}
		// batch: min(200, 200 div 1, 100 div 1) = 100; the scoped budget is excluded.
		if s := res.Plan.Stages[0]; s.Batch != 100 || s.Concurrency != 1 {
			t.Errorf("stage batch %d workers %d", s.Batch, s.Concurrency)
		}
	})
	t.Run("airbnb-example", func(t *testing.T) {
		res := compileFile(t, "testdata/golden/ai-airbnb-example.in.json")
		if !res.Accepted() {
			t.Fatalf("%v", res.Findings)
		}
		short := budgetNamed(t, res.Plan, "ip", "short")
		if short.CountSub != 150 || short.WindowSubSeconds != 1 || short.Ceilings["messages"] != 113 || short.Ceilings["photos"] != 75 || short.Key != "b:demo:shared:demo-egress-ip" {
			t.Errorf("short %+v", short)
		}
		if hour := budgetNamed(t, res.Plan, "ip", "hour"); hour.CountSub != 5000 || hour.WindowSubSeconds != 60 {
			t.Errorf("hour = %d per %ds, want 5000 per 60s", hour.CountSub, hour.WindowSubSeconds)
		}
		if s := res.Plan.Node("audit").Shares["photos"]; s != 1 {
			t.Errorf("audit share for photos %v, want 1", s)
		}
		if ld := budgetNamed(t, res.Plan, "photos", "listing-delete"); ld.WindowSubSeconds != 604800 {
			t.Errorf("listing-delete ttl %d", ld.WindowSubSeconds)
		}
		if got := res.Findings.Rules(); !equalStrings(got, []string{RuleFanoutMultiplies, RuleWindowHeadOfLine}) {
			t.Errorf("warnings %v", got)
		}
	})
	t.Run("observe-provider", func(t *testing.T) {
		res := compileFile(t, "testdata/golden/ai-observe-provider.in.json")
		if !res.Accepted() || len(res.Findings) != 0 {
			t.Fatalf("%v", res.Findings)
		}
		p := res.Plan
		if !p.Watching || len(p.Node("observe").Budgets) != 0 || p.CountersWindowSeconds != 60 || p.Node("observe").Shed {
			t.Errorf("watch plan %+v", p)
		}
		if s := p.Stages[0]; s.Batch != 200 || s.Concurrency != 16 {
			t.Errorf("watch stage batch %d workers %d, want 200 and the 16 partitions", s.Batch, s.Concurrency)
		}
	})
}

// TestWatchKeepsNames is §1.6: a watch plan has the names of the enforce
// plan of the same document.
func TestWatchKeepsNames(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile("testdata/golden/airbnb.in.json")
	var d map[string]any
	_ = json.Unmarshal(b, &d)
	d["watch"] = map[string]any{"durationSeconds": 600}
	d["nodes"].(map[string]any)["prices"].(map[string]any)["ingress"] = map[string]any{"partitions": 4, "shed": true}
	res := compileT(t, Input{Body: body(t, d)})
	enforce := compileFile(t, "testdata/golden/airbnb.in.json")
	if !res.Accepted() {
		t.Fatalf("%v", res.Findings)
	}
	for i, s := range res.Plan.Stages {
		e := enforce.Plan.Stages[i]
		if s.Source != e.Source || s.Group != e.Group || s.Destinations[0].Queue != e.Destinations[0].Queue {
			t.Errorf("stage %d names differ in watch: %+v vs %+v", i, s, e)
		}
	}
	if res.Plan.Stages[0].Concurrency != 4 || res.Plan.Node("prices").Shed {
		t.Errorf("watch stage workers %d (want the 4 partitions), shed %t", res.Plan.Stages[0].Concurrency, res.Plan.Node("prices").Shed)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
