package insight

import (
	"net/url"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// FuzzSimulateQuery: any query string is parsed into in-range numbers or a
// 422 naming the field (code invalid-query); nothing panics.
func FuzzSimulateQuery(f *testing.F) {
	for _, s := range []string{"count=10&timeMs=1000", "minutes=99999", "count=-1", "count=1&count=2", "subWindows=%zz", "minutes=1e3", "count=9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for _, name := range []string{"count", "timeMs", "subWindows"} {
			if _, _, bad := httpapi.QueryInt(v, name); bad != nil && (bad.Status() != 422 || bad.Body().Field != name || bad.Code() != wire.CodeInvalidQuery) {
				t.Fatalf("%s: %+v", name, bad)
			}
		}
		m, bad := httpapi.QueryClamped[int64](v, "minutes", simDefaultMin, 1, simMaxMinutes)
		if bad == nil && (m < 1 || m > simMaxMinutes) {
			t.Fatalf("minutes %d out of [1, %d]", m, simMaxMinutes)
		}
		if bad != nil && (bad.Status() != 422 || bad.Body().Field != "minutes" || bad.Code() != wire.CodeInvalidQuery) {
			t.Fatalf("minutes: %+v", bad)
		}
	})
}

// FuzzExplainQuery: any query string of explain is read into a query the
// node can judge, or a 422 naming a field (a parameter of the query, or
// scope with the key room); nothing panics, and an accepted scope always
// fits every scoped budget's key, an accepted op is named by a budget and
// an accepted transactionId (1..256 bytes) comes alone (path aside).
func FuzzExplainQuery(f *testing.F) {
	n := &plan.Node{Name: "list", Budgets: []plan.Budget{
		{ID: "global", Key: "gate:a:g:list:global"},
		{ID: "per-listing", Key: "gate:a:g:list:per-listing", ScopeBy: "payload.listing"},
		{ID: "deletes", Key: "gate:a:g:list:deletes", WhenOp: []string{"listing.delete", "photo.*"}},
	}}
	for _, s := range []string{"scope=L-1", "op=listing.delete", "op=photo.x&scope=a", "partition=", "scope=a&scope=b", "scop=x", "op=listing.create", "scope=%ff", "path=main&partition=p1", "scope=" + strings.Repeat("x", 600),
		"transactionId=order-1", "transactionId=", "transactionId=t&scope=a", "transactionId=t&path=main", "transactionId=" + strings.Repeat("t", 257)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		x, bad := readExplainQuery(v, n)
		if bad != nil {
			field := bad.Body().Field
			if bad.Status() != 422 || field == "" || (!v.Has(field) && field != "scope" && !(field == "query" && v.Has(""))) {
				t.Fatalf("%q: %d naming %q: %s", raw, bad.Status(), field, bad.Body().Error)
			}
			return
		}
		if x.hasScope && len(x.scope) > plan.ScopeRoom(n.Budgets[1].Key) {
			t.Fatalf("%q: a scope of %d bytes accepted past the key room", raw, len(x.scope))
		}
		if x.hasOp && !opNamed(n, x.op) {
			t.Fatalf("%q: op %q accepted, named by no budget", raw, x.op)
		}
		if x.hasTxn && (x.txn == "" || len(x.txn) > explainMaxTxn || x.hasScope || x.hasOp || x.hasPartition) {
			t.Fatalf("%q: transactionId %d bytes accepted beside scope %v, op %v, partition %v", raw, len(x.txn), x.hasScope, x.hasOp, x.hasPartition)
		}
		if _, _, err := budget.ItemCounters(n, "main", x.op, x.scope, x.hasScope); err != nil {
			t.Fatalf("%q: accepted, then the counters refuse: %v", raw, err)
		}
	})
}
