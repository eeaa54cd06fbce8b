package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/wire"
)

// codeMeanings reads the refusal codes' meanings from their doc comments
// in libs/wire/codes.go ("CodeX means …"), by code.
func codeMeanings(t *testing.T) map[wire.Code]string {
	t.Helper()
	meanings, _ := codeConstants(t)
	return meanings
}

// codeConstants reads the Code constants of libs/wire/codes.go: each code's
// meaning (its doc comment without "CodeX means "), and each constant's
// code by Go name.
func codeConstants(t *testing.T) (meanings map[wire.Code]string, byName map[string]wire.Code) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "libs", "wire", "codes.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	meanings, byName = map[wire.Code]string{}, map[string]wire.Code{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" || len(vs.Values) != 1 || vs.Doc == nil {
				continue
			}
			v, err := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			meanings[wire.Code(v)] = strings.Join(strings.Fields(strings.TrimPrefix(vs.Doc.Text(), vs.Names[0].Name+" means ")), " ")
			byName[vs.Names[0].Name] = wire.Code(v)
		}
	}
	return meanings, byName
}

// TestRefusalCodeTableIsTheCatalogue: gate-api/README.md's table of
// refusal codes lists every code of wire.Codes, in its order, with the
// statuses the catalogue gives it and the meaning its doc comment says.
func TestRefusalCodeTableIsTheCatalogue(t *testing.T) {
	readme := readRoot(t, "gate-api/README.md")
	_, section, ok := strings.Cut(readme, "\n## Refusal codes\n")
	if !ok {
		t.Fatal("gate-api/README.md has no section ## Refusal codes")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([0-9, ]+) \\| (.*) \\|$")
	rows := row.FindAllStringSubmatch(section, -1)
	meanings := codeMeanings(t)
	if len(meanings) != len(wire.Codes) {
		t.Fatalf("libs/wire/codes.go documents %d codes, wire.Codes lists %d", len(meanings), len(wire.Codes))
	}
	for i, c := range wire.Codes {
		if i >= len(rows) {
			t.Errorf("the README's table ends before %q (row %d of the catalogue)", c.Code, i+1)
			continue
		}
		statuses := make([]string, len(c.Statuses))
		for j, s := range c.Statuses {
			statuses[j] = strconv.Itoa(s)
		}
		want := []string{string(c.Code), strings.Join(statuses, ", "), meanings[c.Code]}
		if got := rows[i][1:]; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("README row %d is\n  | `%s` | %s | %s |\nthe catalogue says\n  | `%s` | %s | %s |", i+1, got[0], got[1], got[2], want[0], want[1], want[2])
		}
	}
	if len(rows) > len(wire.Codes) {
		t.Errorf("the README's table has %d rows, the catalogue %d codes", len(rows), len(wire.Codes))
	}
}

// httpStatuses reads net/http's Status constants from the toolchain's
// source, by name.
func httpStatuses(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(runtime.GOROOT(), "src", "net", "http", "status.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						if v, err := strconv.Atoi(lit.Value); err == nil {
							out[n.Name] = v
						}
					}
				}
			}
		}
	}
	if out["StatusNotFound"] != 404 {
		t.Fatalf("read %d statuses from net/http, without StatusNotFound", len(out))
	}
	return out
}

// TestEveryRefusalSiteNamesACatalogueCode: every httpapi.Refuse in the
// code of the HTTP planes names a code of the catalogue (a wire.Code
// constant; the AI agent's refusals pass on the catalogue code libs/agent
// gave them), and where its status is a constant, one the catalogue
// answers that code with — so a refusal no test reaches still carries the
// right code.
func TestEveryRefusalSiteNamesACatalogueCode(t *testing.T) {
	_, consts := codeConstants(t)
	statuses := httpStatuses(t)
	sites, checked := 0, 0
	for _, glob := range []string{"gate-api/server/*.go", "gate-api/internal/*/*.go", "gate-console/console/*.go", "libs/httpapi/*.go"} {
		files, _ := filepath.Glob(filepath.Join("..", glob))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 {
					return true
				}
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					if fn.Sel.Name != "Refuse" || exprName(fn.X) != "httpapi" {
						return true
					}
				case *ast.Ident:
					if fn.Name != "Refuse" {
						return true
					}
				default:
					return true
				}
				sites++
				where := filepath.Base(name)
				code := exprName(call.Args[1])
				c, isConst := consts[strings.TrimPrefix(code, "wire.")]
				switch {
				case strings.HasPrefix(code, "wire.") && isConst:
				case code == "e.Code" && strings.HasSuffix(name, filepath.Join("internal", "ai", "ai.go")):
					return true // libs/agent's own catalogue code
				default:
					t.Errorf("%s: a refusal with the code %s, not a wire.Code constant of the catalogue", where, code)
					return true
				}
				if status, ok := statuses[strings.TrimPrefix(exprName(call.Args[0]), "http.")]; ok {
					checked++
					if !c.Known(status) {
						t.Errorf("%s: %s is answered with %d, which the catalogue does not give %q", where, code, status, c)
					}
				}
				return true
			})
		}
	}
	if sites < 100 {
		t.Fatalf("found only %d refusal sites: the scan is broken", sites)
	}
	t.Logf("%d refusal sites, each with a catalogue code; %d with a constant status checked against it", sites, checked)
}

// exprName is a selector or identifier as written ("http.StatusNotFound").
func exprName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprName(x.X) + "." + x.Sel.Name
	}
	return ""
}
