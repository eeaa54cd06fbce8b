package miniqueen

import (
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// TestRawQueryGetsWhatURLValuesGets checks rawQuery against net/url, the
// oracle: every key of every query answers what url.ParseQuery's Get does.
func TestRawQueryGetsWhatURLValuesGets(t *testing.T) {
	t.Parallel()
	queries := []string{
		"",
		"wait=true&timeout=30000&batch=200",
		"batch=1&batch=2",
		"wait",
		"wait=",
		"=true&wait=yes",
		"&&wait=1&",
		"w%61it=true&timeout=5",
		"consumerGroup=gate%3Arelay&subscriptionFrom=2026-12-03T15%3A00%3A00%2B01%3A00",
		"consumerGroup=a+b&wait=TRUE",
		"wait=%zz&wait=true",
		"wait=true;x=1&wait=false",
		"k%zz=1&k=2",
		"namespace=gate.rrl&task=&partitions=4",
	}
	keys := []string{"wait", "timeout", "batch", "", "consumerGroup", "subscriptionFrom", "k", "namespace", "task", "partitions", "absent"}
	for _, q := range queries {
		want, _ := url.ParseQuery(q)
		for _, k := range keys {
			if got := rawQuery(q).Get(k); got != want.Get(k) {
				t.Errorf("rawQuery(%q).Get(%q) = %q, url.Values gives %q", q, k, got, want.Get(k))
			}
		}
	}
}

// TestGetEachIsGetOfEachKey checks the one-pass read against Get, key by
// key, over the queries above, a pop's own and random ones built from
// keys, repeats, escapes and separators.
func TestGetEachIsGetOfEachKey(t *testing.T) {
	t.Parallel()
	queries := []string{
		"", "wait", "wait=", "=true&wait=yes", "&&wait=1&", "batch=1&batch=2", "w%61it=true&timeout=5",
		"wait=%zz&wait=true", "wait=true;x=1&wait=false", "k%zz=1&k=2",
		"batch=200&wait=true&timeout=30000&consumerGroup=gate%3Arelay&leaseSeconds=30&subscriptionFrom=2026-12-03T15%3A00%3A00Z",
	}
	rnd := rand.New(rand.NewPCG(7, 7))
	parts := []string{"batch", "wait", "timeout", "consumerGroup", "w%61it", "b%zz", "subscriptionFrom", "x"}
	vals := []string{"", "1", "true", "a+b", "%3A", "%zz", "now", "200"}
	for range 3000 {
		var b strings.Builder
		for n := rnd.IntN(8); n > 0; n-- {
			switch rnd.IntN(10) {
			case 0:
				b.WriteString("&")
			case 1:
				b.WriteString(";")
			}
			b.WriteString(parts[rnd.IntN(len(parts))])
			if rnd.IntN(5) > 0 {
				b.WriteString("=" + vals[rnd.IntN(len(vals))])
			}
			b.WriteString("&")
		}
		queries = append(queries, b.String())
	}
	got := make([]string, len(popKeys))
	for _, q := range queries {
		rawQuery(q).GetEach(popKeys, got)
		for i, k := range popKeys {
			if want := rawQuery(q).Get(k); got[i] != want {
				t.Fatalf("GetEach(%q)[%q] = %q, Get answers %q", q, k, got[i], want)
			}
		}
	}
}
