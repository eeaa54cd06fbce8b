package diff_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/diff"
	"github.com/queen-mq/gate/libs/wire"
)

type (
	m = map[string]any
	a = []any
)

// target is shop/payments, a one-node graph: count per 1 s into egress.
func target(count int, egress string) m {
	return m{
		"version": 1,
		"nodes": m{"limit": m{
			"ingress": true,
			"budgets": a{m{"id": "global", "count": count, "timeMs": 1000}},
			"egress":  egress,
		}},
		"paths": a{m{"name": "main", "nodes": a{"limit"}}},
	}
}

// two is a two-node graph: ingress node "in", egress node "ip", one path.
func two() m {
	return m{
		"version": 1,
		"nodes": m{
			"in": m{"ingress": true, "budgets": a{m{"id": "b", "count": 100, "timeMs": 1000}}},
			"ip": m{"budgets": a{m{"id": "ip", "count": 1000, "timeMs": 10000, "subWindows": 10}}, "egress": "shop.two.out"},
		},
		"paths": a{m{"name": "main", "nodes": a{"in", "ip"}}},
	}
}

// side compiles doc as shop/{graph} and stamps it as the store would
// hold it (the document's own encoding).
func side(t *testing.T, graph string, doc m) diff.Side {
	t.Helper()
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := declare.Compile(declare.Input{App: "shop", Name: graph, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan == nil {
		t.Fatalf("%s does not compile: %v", body, res.Errors())
	}
	stored, err := res.Doc.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return diff.Side{Doc: res.Doc, Plan: res.Plan, Body: stored}
}

// with returns a deep copy of doc changed by f.
func with(doc m, f func(m)) m {
	var c m
	b, _ := json.Marshal(doc)
	_ = json.Unmarshal(b, &c)
	f(c)
	return c
}

func node(doc m, name string) m { return doc["nodes"].(m)[name].(m) }

func TestCompute(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		from, to func(t *testing.T) diff.Side
		check    func(t *testing.T, d wire.Diff)
	}{
		{
			name: "created: everything is added, ingress groups start at the head",
			from: func(*testing.T) diff.Side { return diff.Side{} },
			to:   func(t *testing.T) diff.Side { return side(t, "two", two()) },
			check: func(t *testing.T, d wire.Diff) {
				if !d.Created || !d.Changed || d.Deleted || d.FromVersion != nil || *d.ToVersion != 1 || d.Mode != nil {
					t.Fatalf("created: %+v", d)
				}
				if len(d.Nodes) != 2 || d.Nodes[0].Node != "in" || d.Nodes[0].Change != wire.ChangeAdded || len(d.Nodes[0].Budgets) != 1 ||
					d.Nodes[0].Budgets[0].To.Count != 100 || d.Nodes[0].Budgets[0].From != nil {
					t.Fatalf("nodes %+v", d.Nodes)
				}
				if len(d.Paths) != 1 || d.Paths[0].Change != wire.ChangeAdded || len(d.Paths[0].To.Shares) != 2 {
					t.Fatalf("paths %+v", d.Paths)
				}
				for _, q := range d.Queues {
					if q.Change != wire.ChangeAdded {
						t.Errorf("queue %+v not added", q)
					}
				}
				if len(d.Queues) != 3 {
					t.Errorf("queues %+v, want ingress, interior and egress added", d.Queues)
				}
				seeds := map[string]string{}
				for _, g := range d.Groups {
					seeds[g.Node] = g.SeedsAt
				}
				if len(d.Groups) != 2 || seeds["in"] != wire.SeedsAtHead || seeds["ip"] != wire.SeedsAtTail {
					t.Errorf("groups %+v, want in at the head and ip at the tail", d.Groups)
				}
				if len(d.Counters) != 0 || len(d.Settings) != 0 {
					t.Errorf("a created graph changes no counter window and no setting: %+v %+v", d.Counters, d.Settings)
				}
			},
		},
		{
			name: "deleted: everything is removed",
			from: func(t *testing.T) diff.Side { return side(t, "two", two()) },
			to:   func(*testing.T) diff.Side { return diff.Side{} },
			check: func(t *testing.T, d wire.Diff) {
				if !d.Deleted || d.Created || !d.Changed || *d.FromVersion != 1 || d.ToVersion != nil {
					t.Fatalf("deleted: %+v", d)
				}
				for _, n := range d.Nodes {
					if n.Change != wire.ChangeRemoved || n.Budgets[0].To != nil || n.Budgets[0].From == nil {
						t.Errorf("node %+v", n)
					}
				}
				if len(d.Queues) != 3 || d.Queues[0].Change != wire.ChangeRemoved || len(d.Groups) != 2 || d.Groups[0].Change != wire.ChangeRemoved {
					t.Errorf("queues %+v groups %+v, want every one removed", d.Queues, d.Groups)
				}
			},
		},
		{
			name: "the same document: nothing changes",
			from: func(t *testing.T) diff.Side { return side(t, "two", two()) },
			to:   func(t *testing.T) diff.Side { return side(t, "two", two()) },
			check: func(t *testing.T, d wire.Diff) {
				if d.Changed || !diff.Empty(d) || *d.FromVersion != 1 || *d.ToVersion != 1 {
					t.Fatalf("identical documents: %+v", d)
				}
			},
		},
		{
			name: "the wizard over a live target: rate 5 → 100 and a new egress",
			from: func(t *testing.T) diff.Side { return side(t, "payments", target(5, "shop.payments.out")) },
			to:   func(t *testing.T) diff.Side { return side(t, "payments", target(100, "shop.new.out")) },
			check: func(t *testing.T, d wire.Diff) {
				if !d.Changed || d.Created || len(d.Nodes) != 1 {
					t.Fatalf("diff %+v", d)
				}
				n := d.Nodes[0]
				if n.Node != "limit" || n.Change != wire.ChangeChanged || len(n.Fields) != 1 || n.Fields[0].Field != "egress" ||
					*n.Fields[0].From != "shop.payments.out" || *n.Fields[0].To != "shop.new.out" {
					t.Fatalf("node %+v fields %+v, want egress shop.payments.out → shop.new.out", n, n.Fields)
				}
				b := n.Budgets
				if len(b) != 1 || b[0].Change != wire.ChangeChanged || b[0].From.Count != 5 || b[0].To.Count != 100 ||
					!slices.Equal(b[0].From.Ceilings, []wire.PathCeiling{{Path: "main", Ceiling: 5}}) ||
					!slices.Equal(b[0].To.Ceilings, []wire.PathCeiling{{Path: "main", Ceiling: 100}}) {
					t.Fatalf("budgets %+v, want global 5 → 100 with its ceilings", b)
				}
				if len(d.Queues) != 2 || d.Queues[0].Queue != "shop.new.out" || d.Queues[0].Change != wire.ChangeAdded ||
					d.Queues[1].Queue != "shop.payments.out" || d.Queues[1].Change != wire.ChangeRemoved {
					t.Fatalf("queues %+v, want shop.new.out provisioned and shop.payments.out left unused", d.Queues)
				}
				if len(d.Groups) != 0 || len(d.Paths) != 0 || len(d.Counters) != 0 {
					t.Errorf("groups %+v paths %+v counters %+v, want none", d.Groups, d.Paths, d.Counters)
				}
			},
		},
		{
			name: "Watch → enforcing: the mode changes and the budgets become enforced",
			from: func(t *testing.T) diff.Side {
				return side(t, "payments", with(target(5, "shop.payments.out"), func(d m) { d["watch"] = m{"durationSeconds": 3600} }))
			},
			to: func(t *testing.T) diff.Side {
				return side(t, "payments", with(target(5, "shop.payments.out"), func(d m) { d["version"] = 2 }))
			},
			check: func(t *testing.T, d wire.Diff) {
				if d.Mode == nil || d.Mode.From != wire.ModeWatch || d.Mode.To != wire.ModeEnforce {
					t.Fatalf("mode %+v, want watch → enforce", d.Mode)
				}
				if len(d.Nodes) != 1 || len(d.Nodes[0].Budgets) != 1 || d.Nodes[0].Budgets[0].Change != wire.ChangeAdded {
					t.Fatalf("nodes %+v, want global enforced from now (added)", d.Nodes)
				}
				var watch *wire.FieldChange
				for i := range d.Settings {
					if d.Settings[i].Field == "watch.durationSeconds" {
						watch = &d.Settings[i]
					}
				}
				if watch == nil || *watch.From != "1 h" || watch.To != nil {
					t.Errorf("settings %+v, want watch.durationSeconds 1 h → none", d.Settings)
				}
			},
		},
		{
			name: "a window change: the counter's sub-window and per-sub-window count",
			from: func(t *testing.T) diff.Side { return side(t, "two", two()) },
			to: func(t *testing.T) diff.Side {
				return side(t, "two", with(two(), func(d m) {
					d["version"] = 2
					node(d, "ip")["budgets"] = a{m{"id": "ip", "count": 1000, "timeMs": 10000, "subWindows": 2}}
				}))
			},
			check: func(t *testing.T, d wire.Diff) {
				if len(d.Counters) != 1 {
					t.Fatalf("counters %+v, want ip's", d.Counters)
				}
				c := d.Counters[0]
				if c.Node != "ip" || c.Budget != "ip" || c.FromWindowSeconds != 1 || c.ToWindowSeconds != 5 || c.FromCountSub != 100 || c.ToCountSub != 500 {
					t.Fatalf("counter %+v, want 1 s → 5 s and 100 → 500 per sub-window", c)
				}
				if b := d.Nodes[0].Budgets[0]; b.From.SubWindows != 10 || b.To.SubWindows != 2 {
					t.Errorf("budget %+v", b)
				}
			},
		},
		{
			name: "a path added beside main: its share, its groups, the shared interior",
			from: func(t *testing.T) diff.Side { return side(t, "two", two()) },
			to: func(t *testing.T) diff.Side {
				return side(t, "two", with(two(), func(d m) {
					d["version"] = 2
					d["nodes"].(m)["bulk"] = m{"ingress": true, "budgets": a{m{"id": "b", "count": 10, "timeMs": 1000}}}
					d["paths"] = append(d["paths"].(a), m{"name": "bulk", "share": 0.5, "priority": 1, "nodes": a{"bulk", "ip"}})
				}))
			},
			check: func(t *testing.T, d wire.Diff) {
				var bulk *wire.PathChange
				for i := range d.Paths {
					if d.Paths[i].Path == "bulk" {
						bulk = &d.Paths[i]
					}
				}
				if bulk == nil || bulk.Change != wire.ChangeAdded || *bulk.To.Share != 0.5 || bulk.To.Priority != 1 {
					t.Fatalf("paths %+v, want bulk added at share 0.5", d.Paths)
				}
				var ipShare float64
				for _, s := range bulk.To.Shares {
					if s.Node == "ip" {
						ipShare = s.Share
					}
				}
				if ipShare != 0.5 {
					t.Errorf("bulk's effective share at ip %v, want 0.5", ipShare)
				}
				var added []string
				for _, g := range d.Groups {
					if g.Change == wire.ChangeAdded {
						added = append(added, g.Path+"@"+g.Node+":"+g.SeedsAt)
					}
				}
				slices.Sort(added)
				if !slices.Equal(added, []string{"bulk@bulk:head", "bulk@ip:tail"}) {
					t.Errorf("added groups %v, want bulk's at bulk (head) and ip (tail)", added)
				}
				var ip *wire.NodeChange
				for i := range d.Nodes {
					if d.Nodes[i].Node == "ip" {
						ip = &d.Nodes[i]
					}
				}
				if ip == nil || len(ip.Budgets) != 1 || len(ip.Budgets[0].To.Ceilings) != 2 {
					t.Fatalf("ip's budget should gain bulk's ceiling: %+v", d.Nodes)
				}
			},
		},
		{
			name: "a graph setting: maxAttempts",
			from: func(t *testing.T) diff.Side { return side(t, "two", two()) },
			to:   func(t *testing.T) diff.Side { return side(t, "two", with(two(), func(d m) { d["maxAttempts"] = 7 })) },
			check: func(t *testing.T, d wire.Diff) {
				if !d.Changed || len(d.Settings) != 1 || d.Settings[0].Field != "maxAttempts" || *d.Settings[0].From != "3" || *d.Settings[0].To != "7" {
					t.Fatalf("settings %+v, want maxAttempts 3 → 7", d.Settings)
				}
				if len(d.Nodes) != 0 || len(d.Queues) != 0 {
					t.Errorf("nodes %+v queues %+v, want none", d.Nodes, d.Queues)
				}
			},
		},
		{
			name: "a sub-second window is enforced per second: the diff shows what is enforced",
			from: func(t *testing.T) diff.Side { return side(t, "payments", target(10, "shop.payments.out")) },
			to: func(t *testing.T) diff.Side {
				return side(t, "payments", with(target(10, "shop.payments.out"), func(d m) {
					node(d, "limit")["budgets"] = a{m{"id": "global", "count": 10, "timeMs": 500}}
				}))
			},
			check: func(t *testing.T, d wire.Diff) {
				b := d.Nodes[0].Budgets[0]
				if b.From.TimeMs != 1000 || b.To.TimeMs != 500 || b.To.WindowSubSeconds != 1 || b.To.CountSub != 10 {
					t.Fatalf("budget %+v → %+v, want 10 per 500 ms enforced as 10 per 1 s", b.From, b.To)
				}
				if len(d.Counters) != 0 {
					t.Errorf("the counter's window stays 1 s: %+v", d.Counters)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := diff.Compute(tc.from(t), tc.to(t))
			tc.check(t, d)
			// Every list is a list, never null, on the wire.
			raw, _ := json.Marshal(d)
			if strings.Contains(string(raw), "null,") && strings.Contains(string(raw), `"nodes":null`) {
				t.Errorf("a null list in %s", raw)
			}
			for _, k := range []string{"nodes", "paths", "queues", "groups", "counters", "settings"} {
				if strings.Contains(string(raw), `"`+k+`":null`) {
					t.Errorf("%s is null in %s", k, raw)
				}
			}
		})
	}
}

// The text says the numbers and the consequences a person reviews: the old
// and new rate, the queue provisioned and the one left unused, the mode.
func TestLinesSayWhatChanges(t *testing.T) {
	t.Parallel()
	d := diff.Compute(side(t, "payments", target(5, "shop.payments.out")), side(t, "payments", with(target(100, "shop.new.out"), func(d m) { d["version"] = 2 })))
	text := strings.Join(diff.Lines(d), "\n")
	for _, want := range []string{
		"version 1 → 2",
		"node limit: changed",
		"  egress: shop.payments.out → shop.new.out",
		"  budget global: 5 per 1 s → 100 per 1 s",
		"ceilings main 5 → 100",
		"queue shop.new.out: provisioned (egress;",
		"queue shop.payments.out: left unused (was egress)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "enforced as") {
		t.Errorf("a budget enforced as declared on both sides repeats its numbers:\n%s", text)
	}
	if s := diff.Summary(d); strings.Contains(s, "  ") || !strings.Contains(s, "node limit (egress: shop.payments.out → shop.new.out, budget global: 5 per 1 s → 100 per 1 s") || len(s) > 300 {
		t.Errorf("summary %q", s)
	}
	same := diff.Compute(side(t, "payments", target(5, "x.out")), side(t, "payments", target(5, "x.out")))
	if l := diff.Lines(same); len(l) != 1 || !strings.HasPrefix(l[0], "no change") {
		t.Errorf("an unchanged document reads %q", l)
	}
	created := diff.Lines(diff.Compute(diff.Side{}, side(t, "payments", target(5, "x.out"))))
	if !strings.HasPrefix(created[0], "new graph at version 1: nothing was stored") || !slices.ContainsFunc(created, func(l string) bool { return strings.Contains(l, "budget global: added, 5 per 1 s") }) {
		t.Errorf("a created graph reads %q", created)
	}
	watch := diff.Compute(
		side(t, "payments", with(target(5, "x.out"), func(d m) { d["watch"] = m{"durationSeconds": 86400} })),
		side(t, "payments", with(target(5, "x.out"), func(d m) { d["version"] = 2 })))
	if text := strings.Join(diff.Lines(watch), "\n"); !strings.Contains(text, "mode: watch → enforce (limits activated") {
		t.Errorf("Watch → enforcing reads:\n%s", text)
	}
	long := diff.Summary(diff.Compute(diff.Side{}, side(t, "two", two())))
	if len(long) > 300 {
		t.Errorf("summary of %d bytes", len(long))
	}
}
