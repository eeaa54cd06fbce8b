package check

import (
	"strings"
	"testing"
)

// TestMissingGraphNameSaysHowToSupplyIt: a document a PUT accepts (the route
// names the graph) must not be refused by check with an empty-name error; it
// says to pass --name or add the field, and with --name it is accepted.
func TestMissingGraphNameSaysHowToSupplyIt(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"version":2,"nodes":{"a":{"ingress":true,"budgets":[{"id":"s","count":10,"timeMs":1000}],"egress":{"queue":"x.out"}}},"paths":[{"name":"m","nodes":["a"]}]}`)
	r := Check("route-named.json", doc, Options{})
	if r.Accepted || len(r.Errors) != 1 {
		t.Fatalf("accepted=%t errors=%v, want one refusal", r.Accepted, r.Errors)
	}
	f := r.Errors[0]
	if f.Rule != "graph-name" || f.At != "/graph" || !strings.Contains(f.Message, "pass --name") || !strings.Contains(f.Message, "add the field") {
		t.Errorf("finding %+v does not name --name and the field", f)
	}
	if r := Check("route-named.json", doc, Options{Name: "b", App: "a"}); !r.Accepted || r.Plan.Graph != "b" || r.Plan.Application != "a" {
		t.Errorf("with --app a --name b: accepted=%t errors=%v", r.Accepted, r.Errors)
	}
}
