package cost

import (
	"errors"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	t.Parallel()
	path := Rule{Path: "payload.rooms", Default: 2, Max: 50}
	cases := []struct {
		name string
		rule Rule
		data string
		want int64
		poor bool // too expensive
	}{
		{"fixed cost", Fixed(3), `{"rooms":40}`, 3, false},
		{"fixed cost floors at 1", Fixed(0), `{}`, 1, false},
		{"integer at the path", path, `{"rooms":40}`, 40, false},
		{"whole float", path, `{"rooms":3.0}`, 3, false},
		{"exponent", path, `{"rooms":1e1}`, 10, false},
		{"absent falls back", path, `{"other":1}`, 2, false},
		{"null falls back", path, `{"rooms":null}`, 2, false},
		{"string falls back", path, `{"rooms":"5"}`, 2, false},
		{"fraction falls back", path, `{"rooms":3.5}`, 2, false},
		{"zero falls back", path, `{"rooms":0}`, 2, false},
		{"negative falls back", path, `{"rooms":-4}`, 2, false},
		{"object falls back", path, `{"rooms":{"n":4}}`, 2, false},
		{"payload not an object", path, `[1,2]`, 2, false},
		{"malformed payload falls back", path, `{"rooms":`, 2, false},
		{"equal to max", path, `{"rooms":50}`, 50, false},
		{"above max", path, `{"rooms":51}`, 0, true},
		{"beyond int64", path, `{"rooms":99999999999999999999}`, 0, true},
		{"last duplicate wins", path, `{"rooms":60,"rooms":7}`, 7, false},
		{"nested path", Rule{Path: "payload.a.b", Default: 1, Max: 9}, `{"a":{"x":[1,{"b":2}],"b":4}}`, 4, false},
		{"arrays are not indexed", Rule{Path: "payload.a.0", Default: 1, Max: 9}, `{"a":[5]}`, 1, false},
		{"escaped key", Rule{Path: "payload.ro\"ms", Default: 1, Max: 9}, `{"ro\"ms":6}`, 6, false},
		{"whitespace", path, " {\n \"rooms\" : 12 \n} ", 12, false},
		{"default above max is refused", Rule{Path: "payload.x", Default: 5, Max: 4}, `{}`, 0, true},
	}
	for _, tc := range cases {
		got, err := tc.rule.Of([]byte(tc.data))
		if tc.poor {
			var te *TooExpensiveError
			if !errors.As(err, &te) || !errors.Is(err, ErrTooExpensive) || te.Max != tc.rule.Max {
				t.Errorf("%s: err %v, want too expensive", tc.name, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: Of = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	_, err := path.Of([]byte(`{"rooms":51}`))
	if err == nil || err.Error() == "" || !contains(err.Error(), "51") || !contains(err.Error(), "50") {
		t.Errorf("message %v does not name the cost and the max", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestScope(t *testing.T) {
	t.Parallel()
	cases := []struct {
		data, path, want string
		ok               bool
	}{
		{`{"listingId":"L-1"}`, "payload.listingId", "L-1", true},
		{`{"listingId":"a\u00e9\"b"}`, "payload.listingId", "aé\"b", true},
		{`{"listingId":91372}`, "payload.listingId", "91372", true},
		{`{"listingId":1.5}`, "payload.listingId", "1.5", true},
		{`{"listingId":1.50}`, "payload.listingId", "1.5", true},
		{`{"listingId":true}`, "payload.listingId", "true", true},
		{`{"listingId":false}`, "payload.listingId", "false", true},
		{`{"listingId":null}`, "payload.listingId", "", false},
		{`{"listingId":{}}`, "payload.listingId", "", false},
		{`{"listingId":[1]}`, "payload.listingId", "", false},
		{`{}`, "payload.listingId", "", false},
		{`{"a":{"b":"x"}}`, "payload.a.b", "x", true},
		{`{"a":"x"}`, "payload.a.b", "", false},
		{`{"a":"x"}`, "a", "", false},
	}
	for _, tc := range cases {
		got, ok := Scope([]byte(tc.data), tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Scope(%s, %s) = %q, %t; want %q, %t", tc.data, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestOpAndMatch(t *testing.T) {
	t.Parallel()
	ops := []struct{ data, want string }{
		{`{"op":"photo.delete"}`, "photo.delete"},
		{`{"op":5}`, ""},
		{`{}`, ""},
		{`{"a":{"op":"x"}}`, ""},
		{`"text"`, ""},
	}
	for _, tc := range ops {
		if got := Op([]byte(tc.data)); got != tc.want {
			t.Errorf("Op(%s) = %q, want %q", tc.data, got, tc.want)
		}
	}
	matches := []struct {
		patterns []string
		op       string
		want     bool
	}{
		{[]string{"photo.*"}, "photo.delete", true},
		{[]string{"photo.*"}, "photo.a.b", true},
		{[]string{"photo.*"}, "photo", false},
		{[]string{"photo.*"}, "photos.x", false},
		{[]string{"*"}, "", true},
		{[]string{"*"}, "anything", true},
		{[]string{"photo.delete"}, "photo.delete", true},
		{[]string{"photo.delete"}, "photo.deleted", false},
		{[]string{"a", "b"}, "b", true},
		{[]string{}, "a", false},
		{[]string{"photo*"}, "photos", false},
	}
	for _, tc := range matches {
		if got := MatchOp(tc.patterns, tc.op); got != tc.want {
			t.Errorf("MatchOp(%q, %q) = %t, want %t", tc.patterns, tc.op, got, tc.want)
		}
	}
	if !Applies(nil, "x") || Applies([]string{}, "x") || !Applies([]string{"x"}, "x") {
		t.Error("Applies: nil charges every item, [] none")
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	valid := map[string]bool{
		"payload.a": true, "payload.a.b": true, "payload": false, "payload.": false, "payload..a": false,
		"payload.a.": false, "data.a": false, "a": false, "": false, "Payload.a": false,
	}
	for p, want := range valid {
		if ValidPath(p) != want {
			t.Errorf("ValidPath(%q) = %t", p, !want)
		}
	}
	if !AddressesStamp("payload._gate") || !AddressesStamp("payload._gate.hop") || AddressesStamp("payload.a._gate") || AddressesStamp("payload._gates") {
		t.Error("AddressesStamp")
	}
}

func FuzzLookup(f *testing.F) {
	f.Add([]byte(`{"rooms":4,"a":{"b":[1,{"c":"x"}]}}`), "payload.a.b")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		Lookup(data, path)
		Scope(data, path)
		Op(data)
		c, err := Rule{Path: path, Default: 1, Max: 10}.Of(data)
		if err == nil && (c < 1 || c > 10) {
			t.Fatalf("cost %d outside 1..10", c)
		}
	})
}

func BenchmarkOf(b *testing.B) {
	data := []byte(`{"listingId":"L-91372","op":"photo.delete","meta":{"source":"api","tags":["a","b"]},"rooms":12,"_gate":{"graph":"airbnb","hop":1}}`)
	r := Rule{Path: "payload.rooms", Default: 1, Max: 50}
	b.ReportAllocs()
	for b.Loop() {
		if c, err := r.Of(data); err != nil || c != 12 {
			b.Fatal(c, err)
		}
	}
}

func BenchmarkScopeAndOp(b *testing.B) {
	data := []byte(`{"listingId":"L-91372","op":"photo.delete","meta":{"source":"api","tags":["a","b"]},"rooms":12}`)
	patterns := []string{"photo.*"}
	b.ReportAllocs()
	for b.Loop() {
		v, ok := Scope(data, "payload.listingId")
		if !ok || v == "" || !MatchOp(patterns, Op(data)) {
			b.Fatal(v)
		}
	}
}

// A member nested more than 512 levels deep makes the object unreadable
// (its cost falls back to the default), so hostile payloads stay cheap;
// 512 levels are read.
func TestLookupBoundsNesting(t *testing.T) {
	t.Parallel()
	nested := func(levels int) string {
		return `{"deep":` + strings.Repeat("[", levels) + "1" + strings.Repeat("]", levels) + `,"rooms":7}`
	}
	r := Rule{Path: "payload.rooms", Default: 2, Max: 9}
	if c, err := r.Of([]byte(nested(512))); err != nil || c != 7 {
		t.Errorf("512 levels: cost %d, %v; want 7", c, err)
	}
	if c, err := r.Of([]byte(nested(513))); err != nil || c != 2 {
		t.Errorf("513 levels: cost %d, %v; want the default 2", c, err)
	}
}
