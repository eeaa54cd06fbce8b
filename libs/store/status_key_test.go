package store

import (
	"strings"
	"testing"
)

// FuzzSplitGraphStatusKey: any key either parses into an app and graph
// without ':' and a non-negative part whose key is the input again, or is
// refused; a built key always parses back.
func FuzzSplitGraphStatusKey(f *testing.F) {
	for _, k := range []string{"status:a:g:r-1:0", "status:a:g:host:12:3", "status::g:r:0", "status:a:g:r:-1", "relay:r", "status:a:g:r:x", "status:a:g::0", "status:a:g:r:+7", "status:a:g:r:007"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		app, graph, replica, part, ok := splitGraphStatusKey(key)
		if ok {
			if app == "" || graph == "" || replica == "" || part < 0 || strings.Contains(app, ":") || strings.Contains(graph, ":") {
				t.Fatalf("%q parsed as %q %q %q %d", key, app, graph, replica, part)
			}
			if back := GraphStatusKey(app, graph, replica, part); back != key {
				t.Fatalf("%q parsed and rebuilt as %q", key, back)
			}
		}
		a, g, r := strings.ReplaceAll(app+"a", ":", ""), strings.ReplaceAll(graph+"g", ":", ""), replica+"r"
		if a2, g2, r2, p2, ok2 := splitGraphStatusKey(GraphStatusKey(a, g, r, 4)); !ok2 || a2 != a || g2 != g || r2 != r || p2 != 4 {
			t.Fatalf("GraphStatusKey(%q, %q, %q, 4) parsed back as %q %q %q %d %v", a, g, r, a2, g2, r2, p2, ok2)
		}
	})
}
