package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/capability"
	"github.com/queen-mq/gate/libs/queen"
)

// §8.3 — getPrefix pages: a listing longer than its limit answers
// truncated with nextAfter, the last key it returned, and a read from that
// cursor (after, exclusive) goes on in byte order until a page is not
// truncated. Gate lists documents, relay status rows, breaker records and
// handover rows this way; none of them may stop at the first page.

func TestSemantic26_GetPrefixPagesWithNextAfterUntilNotTruncated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	const n = 25
	var want []string
	var puts []queen.KVOp
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("pg:%03d", i)
		want = append(want, k)
		puts = append(puts, queen.KVPut(e.ns, k, json.RawMessage(fmt.Sprint(i)), queen.PutOpts{TTLSeconds: 600}))
	}
	// Keys beside the prefix must never appear in a page.
	puts = append(puts, queen.KVPut(e.ns, "pf:000", json.RawMessage(`0`), queen.PutOpts{TTLSeconds: 600}),
		queen.KVPut(e.ns, "ph:000", json.RawMessage(`0`), queen.PutOpts{TTLSeconds: 600}))
	e.kv(t, puts...)

	var got []string
	after := ""
	for page := 0; ; page++ {
		if page > n {
			t.Fatalf("getPrefix did not finish in %d pages (cursor %q)", n, after)
		}
		r := e.kv1(t, queen.KVGetPrefix(e.ns, "pg:", queen.PrefixOpts{After: after, Limit: 7}))
		if len(r.Rows) > 7 {
			t.Fatalf("page %d holds %d rows, over its limit 7", page, len(r.Rows))
		}
		for _, row := range r.Rows {
			if !strings.HasPrefix(row.Key, "pg:") || row.Key <= after {
				t.Fatalf("page %d after %q holds %q: want only pg: keys after the cursor", page, after, row.Key)
			}
			got = append(got, row.Key)
		}
		if !r.Truncated {
			if r.NextAfter != "" {
				t.Errorf("the last page carries nextAfter %q; want it only on a truncated page", r.NextAfter)
			}
			break
		}
		if len(r.Rows) == 0 || r.NextAfter != r.Rows[len(r.Rows)-1].Key {
			t.Fatalf("truncated page %d: nextAfter %q, rows %d; want the last key returned", page, r.NextAfter, len(r.Rows))
		}
		after = r.NextAfter
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paged keys %v, want every pg: key once in byte order %v", got, want)
	}
}

func TestSemantic26_GetPrefixClampsItsLimitToAThousandAndPagesOnFromThere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	const n = 1010
	for from := 0; from < n; from += 200 {
		var puts []queen.KVOp
		for i := from; i < min(from+200, n); i++ {
			puts = append(puts, queen.KVPut(e.ns, fmt.Sprintf("big:%05d", i), json.RawMessage(`1`), queen.PutOpts{TTLSeconds: 600}))
		}
		e.kv(t, puts...)
	}
	first := e.kv1(t, queen.KVGetPrefix(e.ns, "big:", queen.PrefixOpts{Limit: 5000, KeysOnly: true}))
	if len(first.Rows) != 1000 || !first.Truncated || first.NextAfter != "big:00999" {
		t.Fatalf("getPrefix limit 5000 over %d keys: %d rows, truncated %v, nextAfter %q; want 1000 rows (the clamp), truncated, nextAfter big:00999",
			n, len(first.Rows), first.Truncated, first.NextAfter)
	}
	rest := e.kv1(t, queen.KVGetPrefix(e.ns, "big:", queen.PrefixOpts{After: first.NextAfter, Limit: 1000, KeysOnly: true}))
	if len(rest.Rows) != n-1000 || rest.Truncated || rest.Rows[0].Key != "big:01000" {
		t.Fatalf("the page after %q: %d rows, truncated %v; want the last %d keys from big:01000, not truncated", first.NextAfter, len(rest.Rows), rest.Truncated, n-1000)
	}
}

// §8.3 — a keysOnly getPrefix omits every value but keeps each row's
// version, the one get answers, and a put of the row changes it: a relay
// lists the stored documents' keys every reconcile period and reads only
// the rows whose version moved since it last read them.
func TestSemantic26_GetPrefixKeysOnlyOmitsValuesAndCarriesEachRowsVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	e.kv(t, queen.KVPut(e.ns, "ko:a", json.RawMessage(`{"doc":"a"}`), queen.PutOpts{TTLSeconds: 600}),
		queen.KVPut(e.ns, "ko:b", json.RawMessage(`{"doc":"b"}`), queen.PutOpts{TTLSeconds: 600}))
	list := func() map[string]queen.KVRow {
		t.Helper()
		r := e.kv1(t, queen.KVGetPrefix(e.ns, "ko:", queen.PrefixOpts{Limit: 10, KeysOnly: true}))
		out := map[string]queen.KVRow{}
		for _, row := range r.Rows {
			if len(row.Value) != 0 && string(row.Value) != "null" {
				t.Fatalf("keysOnly row %q carries value %s, want none", row.Key, row.Value)
			}
			out[row.Key] = row
		}
		if len(out) != 2 {
			t.Fatalf("keysOnly listing of ko: holds %v, want ko:a and ko:b", out)
		}
		return out
	}
	before := list()
	for _, k := range []string{"ko:a", "ko:b"} {
		got := e.kv1(t, queen.KVGet(e.ns, k))
		if before[k].Version == 0 || before[k].Version != got.Version {
			t.Fatalf("keysOnly row %q has version %d, get answers %d: want the same non-zero token", k, before[k].Version, got.Version)
		}
	}
	e.kv(t, queen.KVPut(e.ns, "ko:a", json.RawMessage(`{"doc":"a2"}`), queen.PutOpts{TTLSeconds: 600}))
	after := list()
	if after["ko:a"].Version == before["ko:a"].Version {
		t.Errorf("ko:a rewritten keeps version %d in a keysOnly listing, want a new one", after["ko:a"].Version)
	}
	if after["ko:b"].Version != before["ko:b"].Version {
		t.Errorf("ko:b untouched moved from version %d to %d", before["ko:b"].Version, after["ko:b"].Version)
	}
}
