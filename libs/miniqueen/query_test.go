package miniqueen

import (
	"net/url"
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
