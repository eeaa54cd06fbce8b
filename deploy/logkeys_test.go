package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// logCalls are the log/slog methods whose arguments after the first
// `skip` are key-value pairs.
var logCalls = map[string]int{
	"Info": 1, "Warn": 1, "Error": 1, "Debug": 1,
	"InfoContext": 2, "WarnContext": 2, "ErrorContext": 2, "DebugContext": 2,
	"Log": 3, "With": 0,
}

// logKeys walks every non-test Go file of the repository and returns each
// literal key given to a log call, with the places it is used.
func logKeys(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..")
	keys := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "node_modules" || strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		collectLogKeys(fset, f, rel, keys)
		return nil
	})
	if err != nil {
		t.Fatalf("walking the repository: %v", err)
	}
	return keys
}

// collectLogKeys adds the literal keys of f's log calls to keys, each with
// its place (rel:line). A call whose receiver is the net/http package
// (http.Error) is not a log call.
func collectLogKeys(fset *token.FileSet, f *ast.File, rel string, keys map[string][]string) {
	ast.Inspect(f, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := c.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		skip, ok := logCalls[sel.Sel.Name]
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == "http" {
			return true
		}
		for i := skip; i < len(c.Args); i += 2 {
			lit, ok := c.Args[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				break
			}
			k, err := strconv.Unquote(lit.Value)
			if err != nil {
				break
			}
			keys[k] = append(keys[k], rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line))
		}
		return true
	})
}

// TestLogKeysAreTheCatalogues: every key a Gate binary logs is one word
// in lowerCamelCase and has a row in docs/operations.md's log-key table,
// and every row is a key some binary logs, so a key is spelled one way
// everywhere (error, never err; app, never application) and an operator's
// query finds every line it means.
func TestLogKeysAreTheCatalogues(t *testing.T) {
	guide := readRoot(t, "docs/operations.md")
	_, section, ok := strings.Cut(guide, "\n## Logs\n")
	if !ok {
		t.Fatal("docs/operations.md has no '## Logs' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
	}
	if len(documented) == 0 {
		t.Fatal("the Logs section of docs/operations.md has no key rows")
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	keys := logKeys(t)
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !camel.MatchString(k) {
			t.Errorf("log key %q (%s) is not one lowerCamelCase word: rename it", k, strings.Join(keys[k], ", "))
			continue
		}
		if !documented[k] {
			t.Errorf("log key %q (%s) has no row in docs/operations.md's Logs table: use a key the table has, or add a row saying what it holds", k, strings.Join(keys[k], ", "))
		}
	}
	for k := range documented {
		if _, used := keys[k]; !used {
			t.Errorf("docs/operations.md's Logs table lists %q, which no binary logs: remove the row", k)
		}
	}
}

// The walker finds the keys of every kind of log call, and only those.
func TestLogKeysWalkerSeesEveryCallShape(t *testing.T) {
	dir := t.TempDir()
	src := `package x
import ("log/slog"; "net/http"; "context")
func f(log *slog.Logger, w http.ResponseWriter, ctx context.Context) {
	log.Info("m", "alpha", 1, "beta", 2)
	log.WarnContext(ctx, "m", "gamma", 3)
	log.With("delta", 4).Error("m")
	log.Log(ctx, slog.LevelInfo, "m", "epsilon", 5)
	http.Error(w, "not a key", 500)
}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "x.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	collectLogKeys(fset, f, "x.go", keys)
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	sort.Strings(got)
	if want := "alpha beta delta epsilon gamma"; strings.Join(got, " ") != want {
		t.Fatalf("keys found %v, want %s", got, want)
	}
}
