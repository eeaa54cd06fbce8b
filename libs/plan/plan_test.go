package plan

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/queen-mq/gate/libs/graph"
)

func u32(n uint32) *uint32 { return &n }

func TestSubdivide(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		count, timeMs    int64
		sub              *uint32
		n, countSub, ttl int64
	}{
		{"one second", 100, 1000, nil, 1, 100, 1},
		{"below 2 s is one window", 100, 1999, nil, 1, 100, 2},
		{"sub-second is per second", 10, 500, nil, 1, 10, 1},
		{"ten one-second windows", 1500, 10000, u32(10), 10, 150, 1},
		{"a minute in 60", 300, 60000, u32(60), 60, 5, 1},
		{"defaulted N is whole seconds", 600, 60000, nil, 60, 10, 1},
		{"defaulted N is at most count", 2, 10000, nil, 2, 1, 5},
		{"a week in one", 100, 604800000, u32(1), 1, 100, 604800},
		{"ttl rounds up, not timeMs/N", 200000, 3600000, u32(2000), 2000, 100, 2},
		{"133 per 2 s", 20000, 300000, u32(150), 150, 133, 2},
		{"1 per 2 s", 5, 10000, u32(10), 10, 1, 2},
		{"7 per 10 s", 7, 10000, nil, 7, 1, 2},
		{"count below one floors", 0, 1000, nil, 1, 1, 1},
		{"N above count floors count_sub at 1", 10, 60000, u32(11), 11, 1, 6},
		{"huge values use exact arithmetic", math.MaxInt64, math.MaxInt64, u32(1), 1, math.MaxInt64, math.MaxInt64/1000 + 1},
		{"declared 0 is floored at 1", 100, 1000, u32(0), 1, 100, 1},
	}
	for _, tc := range cases {
		w := Subdivide(tc.count, tc.timeMs, tc.sub)
		if w.N != tc.n || w.CountSub != tc.countSub || w.TTLSeconds != tc.ttl {
			t.Errorf("%s: Subdivide(%d, %d) = %+v, want N %d countSub %d ttl %d", tc.name, tc.count, tc.timeMs, w, tc.n, tc.countSub, tc.ttl)
		}
		// count_sub / ttl never exceeds count per second.
		if tc.count >= 1 && tc.timeMs >= 1000 && tc.count < 1<<40 && float64(w.CountSub)/float64(w.TTLSeconds) > float64(tc.count)/(float64(tc.timeMs)/1000)+1e-9 {
			t.Errorf("%s: %d per %ds is looser than %d per %dms", tc.name, w.CountSub, w.TTLSeconds, tc.count, tc.timeMs)
		}
	}
}

func TestCeiling(t *testing.T) {
	t.Parallel()
	cases := []struct {
		countSub int64
		share    float64
		want     int64
	}{
		{150, 0.5, 75}, {150, 0.75, 113}, {5, 0.5, 3}, {150, 1, 150}, {1, 0.4, 0}, {1, 0.5, 1},
		{100, -1, 0}, {100, math.NaN(), 0}, {math.MaxInt64, 1, math.MaxInt64},
	}
	for _, tc := range cases {
		if got := Ceiling(tc.countSub, tc.share); got != tc.want {
			t.Errorf("Ceiling(%d, %v) = %d, want %d (half away from zero)", tc.countSub, tc.share, got, tc.want)
		}
	}
}

func TestDefaultShare(t *testing.T) {
	t.Parallel()
	want := []float64{1, 2.0 / 3, 1.0 / 3}
	for r, w := range want {
		if got := DefaultShare(r, 3); got != w {
			t.Errorf("rank %d of 3 = %v, want %v", r, got, w)
		}
	}
	if DefaultShare(0, 0) != 1 {
		t.Error("no ranks means the full share")
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	got := []string{
		Namespace("channel"), IngressQueue("channel", "airbnb", "prices"), InteriorQueue("channel", "airbnb", "ip"),
		Group("channel", "airbnb", "photos", "ip"), BudgetKey("channel", "airbnb", "photos", "photos-1m"),
		SharedBudgetKey("channel", "egress-ip"), ScopedKey(SharedBudgetKey("channel", "k"), "91372"),
		BreakerKey("channel", "airbnb", "ip"), DocumentKey("channel", "airbnb"), LegacyTargetKey("channel", "airbnb"),
		HopLabel("channel", "airbnb", "prices", "ip"), TerminalLabel("channel", "airbnb", "prices", "ip"), ReentryLabel(2), DefaultBudgetID(3),
	}
	want := []string{
		"gate.channel", "gate.channel.airbnb.prices.ingress", "gate.channel.airbnb.ip.in",
		"gate.channel.airbnb.photos.ip", "b:channel:airbnb:photos:photos-1m",
		"b:channel:shared:egress-ip", "b:channel:shared:k:91372",
		"brk:channel:airbnb:ip", "graph:channel:airbnb", "spec:channel:airbnb",
		"channel/airbnb/prices/ip", "channel/airbnb/prices/ip/out", "r2", "b3",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names\n got %q\nwant %q", got, want)
	}
}

func TestDeriveTransactionID(t *testing.T) {
	t.Parallel()
	// Expected values from an independent UUIDv5 implementation (Python's
	// uuid.uuid5 over parent + "\x1f" + label).
	cases := []struct{ parent, label, want string }{
		{"4f9a2c1e-0000-4000-8000-000000000001", "channel/airbnb/prices/ip", "6042d829-f1a6-57bc-b7c6-3df6f0143f7e"},
		{"parent", "channel/airbnb/prices/ip/out", "0c4a4277-ddd7-56a2-bc39-420b975b9271"},
		{"x", "r1", "44944c66-e820-5a15-8107-92a32afcda68"},
		{"", "", "1ae6aed1-f0be-5596-a02b-f6bbf907276e"},
	}
	for _, tc := range cases {
		if got := DeriveTransactionID(tc.parent, tc.label); got != tc.want {
			t.Errorf("DeriveTransactionID(%q, %q) = %s, want %s", tc.parent, tc.label, got, tc.want)
		}
	}
	// Appending many ids to one buffer gives each the same value, in order.
	var buf []byte
	for _, tc := range cases {
		buf = AppendDerivedTransactionID(buf, tc.parent, tc.label)
	}
	for i, tc := range cases {
		if got := string(buf[i*TransactionIDLen : (i+1)*TransactionIDLen]); got != tc.want {
			t.Errorf("appended id %d = %s, want %s", i, got, tc.want)
		}
	}
}

func BenchmarkDeriveTransactionID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		DeriveTransactionID("4f9a2c1e-0000-4000-8000-000000000001", "channel/airbnb/prices/ip")
	}
}

func mustParse(t *testing.T, doc string) *graph.Document {
	t.Helper()
	d, err := graph.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A fan-out with a shared interior queue, converging paths, and one node
// both entry and later hop.
const topology = `{"application":"a","graph":"g","version":1,
"nodes":{
 "in":{"ingress":{"partitions":4},"budgets":[{"id":"g","count":3000,"timeMs":1000}]},
 "side":{"ingress":{"queue":"app.side"},"budgets":[{"id":"g","count":50,"timeMs":1000}]},
 "x":{"cost":{"path":"payload.n","default":2,"max":4},"budgets":[{"id":"g","count":400,"timeMs":2000,"subWindows":2},{"id":"s","count":5,"timeMs":1000,"scopeBy":"payload.k"}],"egress":"out.x"},
 "y":{"budgets":[{"id":"passthrough","count":1000000,"timeMs":1000,"subWindows":1}],"egress":{"queue":"out.y","group":"w"}}
},
"paths":[
 {"name":"p","priority":0,"nodes":["in",["x","y"]]},
 {"name":"q","priority":1,"nodes":["side","x"]}
]}`

func TestBuildTopology(t *testing.T) {
	t.Parallel()
	p := Build(mustParse(t, topology), Options{})
	type st struct {
		path, node, source string
		hop, branch        int
		share              float64
		batch, workers     uint32
		foreign, owns      bool
		dests              []Destination
	}
	var got []st
	for _, s := range p.Stages {
		got = append(got, st{s.Path, s.Node, s.Source, s.Hop, s.Branch, s.Share, s.Batch, s.Concurrency, s.ChecksForeign, s.OwnsUnstamped, s.Destinations})
	}
	want := []st{
		// 3000/s over lane capacity 1000 → 3 workers, within 4 partitions.
		{"p", "in", "gate.a.g.in.ingress", 0, 0, 1, 200, 3, false, true, []Destination{
			{Node: "x", Queue: "gate.a.g.x.in", DerivesTransactionID: true, Label: "a/g/p/x"},
			{Node: "y", Queue: "gate.a.g.y.in", DerivesTransactionID: true, Label: "a/g/p/y"},
		}},
		// x: count_sub 200, shares 1 (p) and 0.5 (q); batch = 200 div cost.default 2.
		{"p", "x", "gate.a.g.x.in", 1, 0, 1, 100, 1, true, true, []Destination{{Node: "x", Queue: "out.x", DerivesTransactionID: true, Terminal: true, Label: "a/g/p/x/out"}}},
		// y: the passthrough budget does not set workers; the hint is 16 but the rate is unknown → 1.
		{"p", "y", "gate.a.g.y.in", 1, 1, 1, 200, 1, false, true, []Destination{{Node: "y", Queue: "out.y", DerivesTransactionID: true, Terminal: true, Label: "a/g/p/y/out"}}},
		{"q", "side", "app.side", 0, 0, 1, 50, 1, false, true, []Destination{{Node: "x", Queue: "gate.a.g.x.in", DerivesTransactionID: true, Label: "a/g/q/x"}}},
		{"q", "x", "gate.a.g.x.in", 1, 0, 0.5, 50, 1, true, false, []Destination{{Node: "x", Queue: "out.x", DerivesTransactionID: true, Terminal: true, Label: "a/g/q/x/out"}}},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w st
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("stage %d\n got %+v\nwant %+v", i, g, w)
			}
		}
	}
	wantQueues := []Queue{
		{Name: "gate.a.g.in.ingress", Kind: KindIngress, OwnedByGate: true, Partitions: 4},
		{Name: "app.side", Kind: KindIngressYours},
		{Name: "gate.a.g.x.in", Kind: KindInterior, OwnedByGate: true},
		{Name: "gate.a.g.y.in", Kind: KindInterior, OwnedByGate: true},
		{Name: "out.x", Kind: KindEgress},
		{Name: "out.y", Kind: KindEgress},
	}
	if !reflect.DeepEqual(p.Queues, wantQueues) {
		t.Errorf("queues\n got %+v\nwant %+v", p.Queues, wantQueues)
	}
	x := p.Node("x")
	if x.Shares["p"] != 1 || x.Shares["q"] != 0.5 || x.WidestShare != 1 || x.Budgets[0].Ceilings["q"] != 100 || x.Budgets[1].Key != "b:a:g:x:s" || x.Budgets[1].ScopeBy != "payload.k" {
		t.Errorf("node x %+v", x)
	}
	if p.TotalWorkers() != 7 {
		t.Errorf("total workers %d", p.TotalWorkers())
	}
}

func TestBuildOptions(t *testing.T) {
	t.Parallel()
	d := mustParse(t, topology)
	cases := []struct {
		name    string
		opts    Options
		stage   int
		batch   uint32
		workers uint32
	}{
		{"configured batch below the fit", Options{StageBatch: 20}, 0, 20, 3},
		{"configured batch clamped to 1000", Options{StageBatch: 5000}, 0, 1000, 3},
		{"fixed concurrency", Options{StageConcurrency: 9}, 0, 200, 9},
		{"wider lanes", Options{LaneCapacity: 5000}, 0, 200, 1},
		{"observed partitions cap workers", Options{LaneCapacity: 10, ObservedPartitions: map[string]uint32{"app.side": 2}}, 3, 50, 2},
		{"interior hint is the declared ingress partitions", Options{LaneCapacity: 1}, 1, 100, 16},
	}
	for _, tc := range cases {
		s := Build(d, tc.opts).Stages[tc.stage]
		if s.Batch != tc.batch || s.Concurrency != tc.workers {
			t.Errorf("%s: batch %d workers %d, want %d and %d", tc.name, s.Batch, s.Concurrency, tc.batch, tc.workers)
		}
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	t.Parallel()
	d := mustParse(t, topology)
	first, _ := json.Marshal(Build(d, Options{}))
	for range 20 {
		again, _ := json.Marshal(Build(mustParse(t, topology), Options{}))
		if string(first) != string(again) {
			t.Fatal("two builds gave different JSON")
		}
	}
}

func TestResponseShape(t *testing.T) {
	t.Parallel()
	p := Build(mustParse(t, topology), Options{})
	r := NewResponse(p, nil, nil, false)
	b, _ := json.Marshal(r)
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	for _, k := range []string{"ok", "application", "graph", "version", "resolved", "warnings", "trust"} {
		if _, ok := v[k]; !ok {
			t.Errorf("response lacks %q", k)
		}
	}
	if _, ok := v["migrated"]; ok {
		t.Error("a v2 response carries migrated")
	}
	res := v["resolved"].(map[string]any)
	if res["counters"] != nil {
		t.Errorf("counters %v, want null", res["counters"])
	}
	q := res["queues"].([]any)[2].(map[string]any)
	if q["partitions"] != nil {
		t.Errorf("interior partitions %v, want null", q["partitions"])
	}
	in := res["nodes"].([]any)[0].(map[string]any)
	if in["egressQueue"] != nil || in["ingressQueue"] != "gate.a.g.in.ingress" {
		t.Errorf("node entry %v", in)
	}
	if w := v["warnings"].([]any); len(w) != 0 {
		t.Errorf("warnings %v, want []", w)
	}
	m := NewResponse(p, []string{"[w] x"}, nil, true)
	if !m.Migrated || m.Migration == nil || len(m.Warnings) != 1 {
		t.Errorf("v1 response %+v", m)
	}
}

func TestIngressNodes(t *testing.T) {
	t.Parallel()
	p := Build(mustParse(t, topology), Options{})
	if got := p.IngressNodes(); !reflect.DeepEqual(got, []string{"in", "side"}) {
		t.Errorf("IngressNodes = %v", got)
	}
}
