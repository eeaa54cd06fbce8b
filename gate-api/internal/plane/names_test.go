package plane

import "testing"

func TestNameProblem(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"airbnb": true, "a": true, "0-x": true, "a--b-": true,
		"": false, "-a": false, "A": false, "a.b": false, "a/b": false, "..": false,
		"a b": false, "a\x00": false, "é": false, string(make([]byte, 64)): false,
	}
	for name, ok := range cases {
		if got := NameProblem(name) == ""; got != ok {
			t.Errorf("NameProblem(%q) = %q", name, NameProblem(name))
		}
	}
}
