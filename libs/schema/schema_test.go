package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/migrate"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestSchemaIsAValid2020_12Schema(t *testing.T) {
	t.Parallel()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(JSON())))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.(map[string]any)
	if m["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", m["$schema"])
	}
	if m["$id"] != URL {
		t.Errorf("$id = %v, want %s", m["$id"], URL)
	}
	if c := load(); c.err != nil {
		t.Fatal(c.err)
	}
	// JSON hands out a copy: scribbling on it does not change the schema.
	b := JSON()
	b[0] = 'x'
	if JSON()[0] != '{' {
		t.Error("JSON() returned the embedded bytes themselves")
	}
}

func TestKnownGoodDocumentsValidate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "valid", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("want the seed airbnb, four runtime §7.7 examples and the minimal target; found %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			doc, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(doc); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if err := ValidateDraft(doc); err != nil && !strings.HasPrefix(filepath.Base(f), "seed-") {
				// The seed's airbnb is version 3; every drafted example is version 1.
				t.Errorf("ValidateDraft: %v", err)
			}
		})
	}
}

const minimal = `{"version":1,"nodes":{"limit":{"ingress":true,"budgets":[{"id":"global","count":100,"timeMs":1000}],"egress":"demo.out"}},"paths":[{"name":"main","nodes":["limit"]}]}`

// deleteField marks a pointer for removal in mutate.
type deleteField struct{}

// mutate returns the minimal target with value set at ptr (or removed).
func mutate(t *testing.T, base string, ptr string, value any) []byte {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	toks := strings.Split(ptr[1:], "/")
	cur := doc
	for i, tok := range toks {
		last := i == len(toks)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if _, del := value.(deleteField); del {
					delete(c, tok)
				} else {
					c[tok] = value
				}
				break
			}
			cur = c[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil {
				t.Fatalf("bad index %q", tok)
			}
			if last {
				c[n] = value
				break
			}
			cur = c[n]
		default:
			t.Fatalf("cannot walk %s at %q", ptr, tok)
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func raw(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

func TestInvalidDocumentsNameThePointer(t *testing.T) {
	t.Parallel()
	del := deleteField{}
	cases := []struct {
		name   string
		ptr    string
		value  any
		wantAt string
		phrase string
	}{
		{"unknown root field", "/lanes", raw(`[]`), "/lanes", `unknown field "lanes"`},
		{"missing version", "/version", del, "/version", `required field "version"`},
		{"missing nodes", "/nodes", del, "/nodes", `required field "nodes"`},
		{"missing paths", "/paths", del, "/paths", `required field "paths"`},
		{"negative version", "/version", -1, "/version", "minimum"},
		{"version above u32", "/version", 4294967296, "/version", "maximum"},
		{"float version", "/version", 1.5, "/version", "integer"},
		{"application with a dot", "/application", "my.app", "/application", "does not match pattern"},
		{"application upper case", "/application", "Channel", "/application", "does not match pattern"},
		{"application too long", "/application", strings.Repeat("a", 64), "/application", "does not match pattern"},
		{"graph starting with a dash", "/graph", "-x", "/graph", "does not match pattern"},
		{"empty graph name", "/graph", "", "/graph", "does not match pattern"},
		{"no nodes", "/nodes", raw(`{}`), "/nodes", "minProperties"},
		{"no paths", "/paths", raw(`[]`), "/paths", "minItems"},
		{"bad node name", "/nodes/Limit", raw(`{"ingress":true,"budgets":[{"count":1,"timeMs":1000}],"egress":"x"}`), "/nodes/Limit", "name rule"},
		{"unknown node field", "/nodes/limit/lanes", raw(`[]`), "/nodes/limit/lanes", `unknown field "lanes"`},
		{"maxAttempts zero", "/maxAttempts", 0, "/maxAttempts", "minimum"},
		{"maxAttempts above 20", "/maxAttempts", 21, "/maxAttempts", "maximum"},
		{"counters other than 60", "/counters", raw(`{"windowSeconds":300}`), "/counters/windowSeconds", "60"},
		{"counters without window", "/counters", raw(`{}`), "/counters/windowSeconds", "missing"},
		{"watch too short", "/watch", raw(`{"durationSeconds":119}`), "/watch/durationSeconds", "minimum"},
		{"watch too long", "/watch", raw(`{"durationSeconds":2592001}`), "/watch/durationSeconds", "maximum"},
		{"watch unknown field", "/watch", raw(`{"durationSeconds":120,"endsAt":5}`), "/watch/endsAt", "unknown field"},
		{"budget count zero", "/nodes/limit/budgets/0/count", 0, "/nodes/limit/budgets/0/count", "minimum"},
		{"budget missing count", "/nodes/limit/budgets/0/count", del, "/nodes/limit/budgets/0/count", "missing"},
		{"budget window below 100", "/nodes/limit/budgets/0/timeMs", 99, "/nodes/limit/budgets/0/timeMs", "minimum"},
		{"subWindows zero", "/nodes/limit/budgets/0/subWindows", 0, "/nodes/limit/budgets/0/subWindows", "minimum"},
		{"subWindows above 3600", "/nodes/limit/budgets/0/subWindows", 3601, "/nodes/limit/budgets/0/subWindows", "maximum"},
		{"empty whenOp", "/nodes/limit/budgets/0/whenOp", raw(`[]`), "/nodes/limit/budgets/0/whenOp", "minItems"},
		{"bad confidence", "/nodes/limit/budgets/0/confidence", "measured", "/nodes/limit/budgets/0/confidence", "documented"},
		{"documented without provenance", "/nodes/limit/budgets/0/confidence", "documented", "/nodes/limit/budgets/0/asOf", "missing"},
		{"scopeBy outside payload", "/nodes/limit/budgets/0/scopeBy", "body.account", "/nodes/limit/budgets/0/scopeBy", "pattern"},
		{"scopeBy on the gate stamp", "/nodes/limit/budgets/0/scopeBy", "payload._gate.node", "/nodes/limit/budgets/0/scopeBy", "not"},
		{"per-key count zero", "/nodes/limit/budgets/0/keys", raw(`{"acct-42":0}`), "/nodes/limit/budgets/0/keys/acct-42", "minimum"},
		{"per-key count absurd", "/nodes/limit/budgets/0/keys", raw(`{"acct-42":1000000000001}`), "/nodes/limit/budgets/0/keys/acct-42", "maximum"},
		{"per-key counts without scopeBy", "/nodes/limit/budgets/0/keys", raw(`{"acct-42":5}`), "/nodes/limit/budgets/0", "scopeBy"},
		{"unknown budget field", "/nodes/limit/budgets/0/cap", 5, "/nodes/limit/budgets/0/cap", "unknown field"},
		{"only scoped budgets outside watch", "/nodes/limit/budgets/0/scopeBy", "payload.account", "/nodes/limit/budgets", "unconditional"},
		{"no budgets outside watch", "/nodes/limit/budgets", raw(`[]`), "/nodes/limit/budgets", "minItems"},
		{"budgets absent outside watch", "/nodes/limit/budgets", del, "/nodes/limit/budgets", "missing"},
		{"fixed cost zero", "/nodes/limit/cost", 0, "/nodes/limit/cost", "minimum"},
		{"float cost", "/nodes/limit/cost", 1.5, "/nodes/limit/cost", "integer"},
		{"cost object without path", "/nodes/limit/cost", raw(`{"default":1}`), "/nodes/limit/cost/path", "missing"},
		{"cost path with an empty segment", "/nodes/limit/cost", raw(`{"path":"payload..x"}`), "/nodes/limit/cost/path", "pattern"},
		{"cost default zero", "/nodes/limit/cost", raw(`{"path":"payload.x","default":0}`), "/nodes/limit/cost/default", "minimum"},
		{"cost unknown field", "/nodes/limit/cost", raw(`{"path":"payload.x","field":"x"}`), "/nodes/limit/cost/field", "unknown field"},
		{"ingress as a string", "/nodes/limit/ingress", "q", "/nodes/limit/ingress", "got string, want boolean or object"},
		{"cost as a string", "/nodes/limit/cost", "5", "/nodes/limit/cost", "got string, want integer or object"},
		{"egress as a number", "/nodes/limit/egress", 5, "/nodes/limit/egress", "want string or object"},
		{"ingress unknown field", "/nodes/limit/ingress", raw(`{"queue":"q","group":"g"}`), "/nodes/limit/ingress/group", "unknown field"},
		{"ingress negative partitions", "/nodes/limit/ingress", raw(`{"partitions":-1}`), "/nodes/limit/ingress/partitions", "minimum"},
		{"egress object without queue", "/nodes/limit/egress", raw(`{"group":"g"}`), "/nodes/limit/egress/queue", "missing"},
		{"empty egress queue", "/nodes/limit/egress", "", "/nodes/limit/egress", "minLength"},
		{"batch zero", "/nodes/limit/batch", 0, "/nodes/limit/batch", "minimum"},
		{"batch above 1000", "/nodes/limit/batch", 1001, "/nodes/limit/batch", "maximum"},
		{"concurrency above the worker cap", "/nodes/limit/concurrency", 4097, "/nodes/limit/concurrency", "maximum"},
		{"path without name", "/paths/0/name", del, "/paths/0/name", "missing"},
		{"path name with a dot", "/paths/0/name", "a.b", "/paths/0/name", "pattern"},
		{"share zero", "/paths/0/share", 0, "/paths/0/share", "exclusiveMinimum"},
		{"share above one", "/paths/0/share", 1.5, "/paths/0/share", "maximum"},
		{"negative priority", "/paths/0/priority", -1, "/paths/0/priority", "minimum"},
		{"empty path", "/paths/0/nodes", raw(`[]`), "/paths/0/nodes", "minItems"},
		{"one-name fan-out", "/paths/0/nodes", raw(`["limit",["limit"]]`), "/paths/0/nodes/1", "minItems"},
		{"nested fan-out", "/paths/0/nodes", raw(`["limit",["a",["b","c"]]]`), "/paths/0/nodes/1/1", "want"},
		{"two fan-outs", "/paths/0/nodes", raw(`[["a","b"],["c","d"]]`), "/paths/0/nodes", "fan-out"},
		{"unknown path field", "/paths/0/hops", raw(`[]`), "/paths/0/hops", "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			doc := mutate(t, minimal, c.ptr, c.value)
			err := Validate(doc)
			if err == nil {
				t.Fatalf("accepted %s", doc)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *ValidationError: %v", err, err)
			}
			if !hasViolation(ve, c.wantAt, c.phrase) {
				t.Errorf("no violation at %q containing %q; got %v", c.wantAt, c.phrase, ve.Violations)
			}
			if !strings.Contains(err.Error(), "at "+c.wantAt) && len(ve.Violations) <= maxListed {
				t.Errorf("Error() %q does not name %q", err, c.wantAt)
			}
		})
	}
}

func TestWatchAllowsEmptyBudgets(t *testing.T) {
	t.Parallel()
	doc := mutate(t, minimal, "/nodes/limit/budgets", raw(`[]`))
	doc = mutate(t, string(doc), "/watch", raw(`{"durationSeconds":120,"startedAt":1000}`))
	if err := Validate(doc); err != nil {
		t.Errorf("a watch graph with no budgets: %v", err)
	}
	// Budgets kept in watch are still checked value by value.
	bad := mutate(t, string(doc), "/nodes/limit/budgets", raw(`[{"count":0,"timeMs":1000}]`))
	if err := Validate(bad); err == nil || !strings.Contains(err.Error(), "/nodes/limit/budgets/0/count") {
		t.Errorf("count 0 in watch: %v", err)
	}
}

func TestDraftLimits(t *testing.T) {
	t.Parallel()
	big := map[string]any{}
	var paths []any
	for i := 0; i < 21; i++ {
		name := "n" + strconv.Itoa(i)
		big[name] = raw(`{"ingress":true,"budgets":[{"count":1,"timeMs":1000}],"egress":"q"}`)
		paths = append(paths, map[string]any{"name": name, "nodes": []any{name}})
	}
	cases := []struct {
		name   string
		doc    []byte
		wantAt string
		phrase string
	}{
		{"version other than 1", mutate(t, minimal, "/version", 2), "/version", "1"},
		{"21 nodes", mutate(t, minimal, "/nodes", big), "/nodes", "maxProperties"},
		{"21 paths", mutate(t, minimal, "/paths", paths), "/paths", "maxItems"},
		{"startedAt set", mutate(t, minimal, "/watch", raw(`{"durationSeconds":120,"startedAt":5}`)), "/watch", "not"},
		{"over 48000 bytes", mutate(t, minimal, "/nodes/limit/budgets/0/source", strings.Repeat("x", MaxDraftBytes)), "", "48000-byte"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateDraft(c.doc)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ValidateDraft = %v, want a *ValidationError", err)
			}
			if !hasViolation(ve, c.wantAt, c.phrase) {
				t.Errorf("no violation at %q containing %q; got %v", c.wantAt, c.phrase, ve.Violations)
			}
		})
	}
	if err := Validate(mutate(t, minimal, "/nodes", big)); err != nil {
		t.Errorf("the 20-node bound is the assistant's, not PUT's: %v", err)
	}
}

func TestNotJSONIsInvalid(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{``, `{`, `{"version":1} trailing`} {
		if err := Validate([]byte(doc)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q) = %v, want ErrInvalid", doc, err)
		}
	}
}

func TestViolationsAreOrderedAndStable(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"version":-1,"nodes":{"b":{"budgets":[{"count":0,"timeMs":1}]},"a":{"budgets":[{"count":0,"timeMs":1}]}},"paths":[{"name":"X","nodes":[]}],"zzz":1}`)
	first := Validate(doc).Error()
	for i := 0; i < 10; i++ {
		if again := Validate(doc).Error(); again != first {
			t.Fatalf("run %d:\n%s\nfirst:\n%s", i, again, first)
		}
	}
	var ve *ValidationError
	errors.As(Validate(doc), &ve)
	if len(ve.Violations) < 7 {
		t.Fatalf("want every violation listed, got %v", ve.Violations)
	}
	for i := 1; i < len(ve.Violations); i++ {
		if ve.Violations[i-1].At > ve.Violations[i].At {
			t.Errorf("violations out of order: %q before %q", ve.Violations[i-1].At, ve.Violations[i].At)
		}
	}
	if !strings.Contains(first, "and ") || !strings.HasPrefix(first, "graph document does not match the v2 schema: at /nodes/a/budgets/0/count") {
		t.Errorf("Error() = %q", first)
	}
}

// TestAcceptedGoldenDocumentsValidate checks that every document the declare
// compiler's golden tests accept also matches the schema, so the schema is
// never stricter than PUT. Convention: ../declare/testdata/golden/*.in.json
// is accepted unless its name starts with "reject-" or its sibling
// *.findings.json reports a status other than 200 or an error finding; a v1
// input is checked as the v2 document migrate maps it to.
func TestAcceptedGoldenDocumentsValidate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "declare", "testdata", "golden")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the declare compiler's golden documents: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.in.json"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "reject-") || refused(t, strings.TrimSuffix(f, ".in.json")+".findings.json") {
			continue
		}
		checked++
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			doc, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if migrate.IsV1(doc) {
				if doc, _, err = migrate.ToV2(doc); err != nil {
					t.Fatalf("migrating the v1 golden document: %v", err)
				}
			}
			if err := Validate(doc); err != nil {
				t.Errorf("an accepted golden document fails the schema: %v", err)
			}
		})
	}
	if checked == 0 {
		t.Fatalf("no accepted *.in.json under %s", dir)
	}
}

// hasViolation reports whether ve has a violation at the pointer at whose
// problem contains phrase.
func hasViolation(ve *ValidationError, at, phrase string) bool {
	for _, v := range ve.Violations {
		if v.At == at && strings.Contains(v.Problem, phrase) {
			return true
		}
	}
	return false
}

// refused reads a golden findings file: true when it records a refusal.
func refused(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var f struct {
		Status   int `json:"status"`
		Findings []struct {
			Severity string `json:"severity"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if f.Status != 0 && f.Status != 200 {
		return true
	}
	for _, x := range f.Findings {
		if x.Severity == "error" {
			return true
		}
	}
	return false
}

// TestMigratedDocumentsValidate checks that the v2 documents migrate maps
// its v1 golden inputs to match the schema.
func TestMigratedDocumentsValidate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "migrate", "testdata", "*.v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no ../migrate/testdata/*.v2.json")
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(doc); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}
