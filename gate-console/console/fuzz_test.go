package console

import (
	"strings"
	"testing"
)

func FuzzParseGraphs(f *testing.F) {
	for _, s := range []string{"", "demo/demo", "a/b,c/d", "Bad/x", "a/b/c", ",,", "a/-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		gs, bad := parseGraphs(raw, 100)
		if bad != "" {
			if gs != nil || !strings.Contains(bad, "graphs") {
				t.Fatalf("refusal %q with %v", bad, gs)
			}
			return
		}
		for _, g := range gs {
			app, name, ok := strings.Cut(g, "/")
			if !ok || !liveName(app) || !liveName(name) || strings.ContainsAny(g, ".*> \t\r\n") {
				t.Fatalf("accepted %q from %q: it would break a NATS subject", g, raw)
			}
		}
	})
}

func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/graphs/a", "//evil", "/\\evil", "https://x", "", "/a?b=c#d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") || strings.ContainsAny(got, "\r\n\t") {
			t.Fatalf("safeNext(%q) = %q leaves the origin", next, got)
		}
	})
}
