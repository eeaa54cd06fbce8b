package tsgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// generated is the committed TypeScript the web app compiles against.
var generated = filepath.Join("..", "..", "..", "..", "gate-console", "ui", "src", "wire.gen.ts")

// TestGeneratedFileIsCurrent fails when a type in libs/wire changed and
// gate-console/ui/src/wire.gen.ts was not regenerated.
func TestGeneratedFileIsCurrent(t *testing.T) {
	want, err := Generate(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(generated)
	if err != nil {
		t.Fatalf("reading %s: %v; run `go run ./libs/wire/cmd/tsgen` from the repository root", generated, err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s is stale: run `go run ./libs/wire/cmd/tsgen` from the repository root and commit the result", generated)
	}
}

func gen(t *testing.T, src string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Generate(dir)
	return string(b), err
}

func TestShapes(t *testing.T) {
	out, err := gen(t, `package wire
import "encoding/json"
// Base is embedded.
type Base struct {
	ID string `+"`json:\"id\"`"+`
}
// Thing is a thing.
type Thing struct {
	Base
	// N counts.
	N     int64             `+"`json:\"n\"`"+`
	Maybe *float64          `+"`json:\"maybe\"`"+`
	Tags  []string          `+"`json:\"tags,omitempty\"`"+`
	By    map[string]*Base  `+"`json:\"by\"`"+`
	Raw   json.RawMessage   `+"`json:\"raw\"`"+`
	Skip  string            `+"`json:\"-\"`"+`
	Ptrs  []*Base           `+"`json:\"ptrs\"`"+`
	hidden int
}
// Either is custom.
//
// wire:ts string | number
type Either struct{ v any }
type Alias = Thing
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"export interface Thing extends Base {",
		"  /** N counts. */\n  n: number;",
		"  maybe: number | null;",
		"  tags?: string[];",
		"  by: Record<string, Base | null>;",
		"  raw: unknown;",
		"  ptrs: (Base | null)[];",
		"export type Either = string | number;",
		"export type Alias = Thing;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Skip") || strings.Contains(out, "hidden") || strings.Contains(out, "wire:ts") {
		t.Errorf("output shows a skipped field or the directive:\n%s", out)
	}
}

// A string type with typed constants is the union of their values, each
// listed with its meaning; an untyped constant or one of another type is
// not a member.
func TestStringConstantsAreAUnion(t *testing.T) {
	out, err := gen(t, `package wire
// Kind says what it is.
type Kind string
const (
	// KindA means the first.
	KindA Kind = "a-one"
	// KindB means the second,
	// on two lines.
	KindB Kind = "b-two"
	loose = "c"
	Other int = 3
)
// Plain has no constants.
type Plain string
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"/**\n * Kind says what it is.\n *\n * - `a-one`: the first.\n * - `b-two`: the second, on two lines.\n */\nexport type Kind =\n  | \"a-one\"\n  | \"b-two\";\n",
		"export type Plain = string;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"c"`) {
		t.Errorf("an untyped constant joined the union:\n%s", out)
	}
}

func TestRefusesWhatHasNoTypeScript(t *testing.T) {
	for _, src := range []string{
		"package wire\ntype A struct{ X string }\n",
		"package wire\ntype A struct{ X chan int `json:\"x\"` }\n",
		"package wire\ntype A struct{ X map[int]string `json:\"x\"` }\n",
		"package wire\nimport \"time\"\ntype A struct{ X time.Time `json:\"x\"` }\n",
		"package other\ntype A struct{}\n",
	} {
		if out, err := gen(t, src); err == nil {
			t.Errorf("accepted %q:\n%s", src, out)
		}
	}
}
