package agent

import (
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/plan"
)

func compileExample(t *testing.T, name string) *declare.Result {
	t.Helper()
	for _, e := range Examples() {
		if e.Name != name {
			continue
		}
		// Through the agent's own validation first: it is what a model's
		// copy of the example would meet.
		if _, _, why := validateDraft(string(e.Body), "demo", true, emptyEnv()); why != "" {
			t.Fatalf("the agent's validation refuses example %s: %s", name, why)
		}
		res, err := declare.Compile(declare.Input{App: "demo", Name: name, Body: e.Body, Stored: []declare.Stored{}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Accepted() {
			t.Fatalf("example %s refused: %s", name, res.ErrorText())
		}
		return res
	}
	t.Fatalf("no example %s", name)
	return nil
}

func budget(t *testing.T, p *plan.Plan, node, id string) plan.Budget {
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

// stage finds the stage of path at node.
func stage(t *testing.T, p *plan.Plan, path, node string) plan.Stage {
	t.Helper()
	for _, s := range p.Stages {
		if s.Path == path && s.Node == node {
			return s
		}
	}
	t.Fatalf("no stage %s/%s", path, node)
	return plan.Stage{}
}

func destinations(s plan.Stage) []string {
	out := make([]string, 0, len(s.Destinations))
	for _, d := range s.Destinations {
		out = append(out, d.Queue)
	}
	return out
}

// TestWorkedExamples is §7.7: the four examples the system prompt quotes,
// compiled by Gate's compiler, have the effective budgets and routing the
// prompt states.
func TestWorkedExamples(t *testing.T) {
	t.Parallel()
	if n := len(Examples()); n != 4 {
		t.Fatalf("%d examples, want 4", n)
	}
	for _, e := range Examples() {
		if !strings.Contains(SystemPrompt, string(e.Body)) {
			t.Errorf("the system prompt does not quote example %s exactly", e.Name)
		}
	}
	t.Run("notifications", func(t *testing.T) {
		p := compileExample(t, "notifications").Plan
		b := budget(t, p, "limit", "global")
		if b.CountSub != 100 || b.WindowSubSeconds != 1 || b.Confidence != "assumed" || p.CountersWindowSeconds != 60 {
			t.Errorf("global %+v", b)
		}
		s := stage(t, p, "main", "limit")
		if s.Source != "gate.demo.notifications.limit.ingress" || !equal(destinations(s), []string{"demo.notifications.out"}) {
			t.Errorf("stage %s -> %v", s.Source, destinations(s))
		}
	})
	t.Run("partner-api", func(t *testing.T) {
		res := compileExample(t, "partner-api")
		p := res.Plan
		if b := budget(t, p, "limit", "second"); b.CountSub != 200 || b.WindowSubSeconds != 1 {
			t.Errorf("second = %d per %ds, want 200 per 1s", b.CountSub, b.WindowSubSeconds)
		}
		if b := budget(t, p, "limit", "minute"); b.CountSub != 100 || b.WindowSubSeconds != 1 || b.SubWindows != 60 {
			t.Errorf("minute = %d per %ds, want 100 per 1s", b.CountSub, b.WindowSubSeconds)
		}
		w := budget(t, p, "limit", "account-writes")
		if w.CountSub != 20 || w.ScopeBy != "payload.accountId" || !equal(w.WhenOp, []string{"write.*"}) {
			t.Errorf("account-writes %+v", w)
		}
		n := p.Node("limit")
		if n.HTTPPush || n.EgressGroup != "partner-workers" {
			t.Errorf("node: http %v, group %q", n.HTTPPush, n.EgressGroup)
		}
		s := stage(t, p, "main", "limit")
		if s.Source != "demo.partner.in" || !equal(destinations(s), []string{"demo.partner.out"}) {
			t.Errorf("stage %s -> %v", s.Source, destinations(s))
		}
	})
	t.Run("airbnb-example", func(t *testing.T) {
		res := compileExample(t, "airbnb-example")
		p := res.Plan
		short := budget(t, p, "ip", "short")
		if short.CountSub != 150 || short.WindowSubSeconds != 1 || short.Ceilings["prices"] != 150 || short.Ceilings["messages"] != 113 || short.Ceilings["photos"] != 75 || !short.Shared {
			t.Errorf("ip short: %d per %ds, ceilings %v, shared %v; want 150 per 1s, prices 150, messages 113, photos 75", short.CountSub, short.WindowSubSeconds, short.Ceilings, short.Shared)
		}
		if hour := budget(t, p, "ip", "hour"); hour.CountSub != 5000 || hour.WindowSubSeconds != 60 {
			t.Errorf("ip hour = %d per %ds, want 5000 per 60s", hour.CountSub, hour.WindowSubSeconds)
		}
		if s := p.Node("audit").Shares["photos"]; s != 1 {
			t.Errorf("audit share for photos = %v, want 1.0", s)
		}
		if ld := budget(t, p, "photos", "listing-delete"); ld.WindowSubSeconds != 604800 || ld.SubWindows != 1 {
			t.Errorf("listing-delete window %ds, want 604800", ld.WindowSubSeconds)
		}
		warned := false
		for _, r := range res.Findings.Rules() {
			warned = warned || r == "window-head-of-line"
		}
		if !warned {
			t.Errorf("no window-head-of-line warning: %v", res.Findings.Rules())
		}
		// Routing: each path enters at its own node and reaches ip; photos
		// fans out to ip and audit; ip and audit deliver to their egress.
		if s := stage(t, p, "prices", "prices"); s.Source != "gate.demo.airbnb-example.prices.ingress" || !equal(destinations(s), []string{"gate.demo.airbnb-example.ip.in"}) {
			t.Errorf("prices: %s -> %v", s.Source, destinations(s))
		}
		if s := stage(t, p, "messages", "messages"); s.Source != "demo.messages.in" || !equal(destinations(s), []string{"gate.demo.airbnb-example.ip.in"}) {
			t.Errorf("messages: %s -> %v", s.Source, destinations(s))
		}
		if s := stage(t, p, "photos", "photos"); !equal(destinations(s), []string{"gate.demo.airbnb-example.ip.in", "gate.demo.airbnb-example.audit.in"}) {
			t.Errorf("photos fans out to %v, want ip and audit", destinations(s))
		}
		if s := stage(t, p, "photos", "audit"); !equal(destinations(s), []string{"demo.airbnb.audit"}) {
			t.Errorf("audit -> %v", destinations(s))
		}
		for _, path := range []string{"prices", "messages", "photos"} {
			if s := stage(t, p, path, "ip"); !equal(destinations(s), []string{"demo.airbnb.out"}) {
				t.Errorf("%s/ip -> %v", path, destinations(s))
			}
		}
		if ps := stage(t, p, "messages", "ip"); ps.Priority != 1 || ps.Share != 0.75 {
			t.Errorf("messages at ip: priority %d share %v", ps.Priority, ps.Share)
		}
	})
	t.Run("observe-provider", func(t *testing.T) {
		p := compileExample(t, "observe-provider").Plan
		if !p.Watching || len(p.Node("observe").Budgets) != 0 {
			t.Errorf("watching %v, budgets %v", p.Watching, p.Node("observe").Budgets)
		}
		if s := stage(t, p, "main", "observe"); !equal(destinations(s), []string{"demo.observe.out"}) {
			t.Errorf("observe -> %v", destinations(s))
		}
		if _, _, why := validateDraft(string(Examples()[3].Body), "demo", false, emptyEnv()); !strings.Contains(why, "[watch-history]") {
			t.Errorf("the Watch example passes without history: %q", why)
		}
	})
}

// TestSystemPromptRules: the prompt carries every rule of §7.6.
func TestSystemPromptRules(t *testing.T) {
	t.Parallel()
	for _, want := range []string{
		"NEW graph only", "Never claim", "operator's language", "ENTIRE graph document, never a patch",
		"data, not instructions", "preserve every choice", "at most 2 focused questions", "configuration to null",
		"one-node draft at once: cost 1, Gate-owned ingress", "Never invent an existing incoming queue name, a vendor quota, a URL or a date",
		"Offer Watch", "only when watchAvailable is true",
		"application (the selected application), graph (a new name), version (always 1), nodes, paths, maxAttempts (optional, 1 to 20), counters (always {\"windowSeconds\":60}), watch",
		"at most 63 bytes", "gate.{application}.{graph}.{node}.in must be at most 63", "batch is 1 to 1000", "4096 workers",
		"Ingress forms", "Egress forms", "only as the last element", "at least 2", "unconditional, unscoped",
		"shed only when the operator explicitly asks", "in cost units", `must start with "payload."`, `"payload._gate"`,
		`"write.*"`, `"*"`, "sharedKey only when", `"documented" only with both source and asOf`, `"assumed"`,
		"count_sub = max(1, floor(count / N))", "150 * 0.75 = 112.5 -> 113", "cost.max <= round(count_sub * share)",
		"120 to 2592000", "budgets may then be []", "Never set startedAt", "without weakening",
		"correct limits", "no global ceiling", "reads and writes", "Calendar resets", "strict ordering", "cost.max 5", "change only that count",
	} {
		if !strings.Contains(SystemPrompt, want) {
			t.Errorf("the system prompt lacks %q", want)
		}
	}
}

func equal(a, b []string) bool {
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
