package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func readRoot(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// makeVar returns the value of `NAME := value` in the Makefile.
func makeVar(t *testing.T, mk, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` := (.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatalf("the Makefile defines no %s", name)
	}
	return strings.TrimSpace(m[1])
}

// TestImageBuildCheckReplaysTheDockerfile: `make image-build-check` runs
// what the Dockerfile runs — the same npm build in gate-console/ui, the
// same go build flags, the same binaries — so when it passes in CI the
// image build's commands pass too.
func TestImageBuildCheckReplaysTheDockerfile(t *testing.T) {
	df, mk := readRoot(t, "Dockerfile"), readRoot(t, "Makefile")
	flags := makeVar(t, mk, "IMAGE_GO_FLAGS")
	builds := regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build (.*) -o /out/\S+ \./(\S+)$`).FindAllStringSubmatch(df, -1)
	if len(builds) != 2 {
		t.Fatalf("the Dockerfile has %d go build lines, want 2 (the binary and gate-probe)", len(builds))
	}
	targets := []string{}
	for _, b := range builds {
		if b[1] != flags {
			t.Errorf("the Dockerfile builds with %q, make image-build-check with %q", b[1], flags)
		}
		targets = append(targets, b[2])
	}
	if !slices.Equal(targets, []string{"${BINARY}", "deploy/cmd/gate-probe"}) {
		t.Errorf("the Dockerfile builds %v", targets)
	}
	if !strings.Contains(mk, "./deploy/cmd/gate-probe") {
		t.Errorf("make image-build-check does not build gate-probe")
	}
	// The binaries: the Dockerfile's accepted BINARY values, the Makefile's
	// list and the loaders this package checks compose.yaml against.
	m := regexp.MustCompile(`case "\$\{BINARY\}" in ([a-z|-]+)\)`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("the Dockerfile does not check BINARY")
	}
	inDocker := strings.Split(m[1], "|")
	inMake := strings.Fields(makeVar(t, mk, "IMAGE_BINARIES"))
	var inTest []string
	for b := range loaders {
		inTest = append(inTest, b)
	}
	slices.Sort(inDocker)
	slices.Sort(inMake)
	slices.Sort(inTest)
	if !slices.Equal(inDocker, inMake) || !slices.Equal(inDocker, inTest) {
		t.Errorf("binaries: Dockerfile %v, Makefile %v, deploy loaders %v", inDocker, inMake, inTest)
	}
	// The ui stage is the Makefile's npm build in the same directory.
	for _, want := range []string{"WORKDIR /src/gate-console/ui", "RUN npm ci", "RUN npm run build", "COPY --from=ui /src/gate-console/webapp/dist gate-console/webapp/dist"} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	if !strings.Contains(mk, "image-build-check:\n\tcd $(UI) && npm ci && npm run build") || makeVar(t, mk, "UI") != "gate-console/ui" {
		t.Errorf("make image-build-check does not start with the ui stage's npm ci && npm run build in gate-console/ui")
	}
	if !regexp.MustCompile(`(?m)^test: .*\bimage-build-check\b`).MatchString(mk) {
		t.Errorf("make test does not run image-build-check")
	}
	// The final image: static, non-root.
	if !strings.Contains(df, "FROM gcr.io/distroless/static-debian12:nonroot") || !strings.Contains(df, "USER nonroot") {
		t.Errorf("the final stage is not distroless static as nonroot")
	}
}

// TestDockerfileCopiesEveryModule: `go mod download` runs before the
// sources are copied, so every module of go.work needs its go.mod (and
// go.sum where it has one) copied first, or the build stage fails.
func TestDockerfileCopiesEveryModule(t *testing.T) {
	df, work := readRoot(t, "Dockerfile"), readRoot(t, "go.work")
	mods := regexp.MustCompile(`(?m)^\s+\./(\S+)`).FindAllStringSubmatch(work, -1)
	if len(mods) < 8 {
		t.Fatalf("go.work lists %d modules", len(mods))
	}
	for _, m := range mods {
		mod := m[1]
		files := []string{"go.mod"}
		if _, err := os.Stat(filepath.Join("..", mod, "go.sum")); err == nil {
			files = append(files, "go.sum")
		}
		want := "COPY " + mod + "/" + strings.Join(files, " "+mod+"/") + " " + mod + "/"
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
}

// TestDockerignoreKeepsTheContextSmall: what a local run, the tests and
// the web app's tooling leave behind stays out of the build context.
func TestDockerignoreKeepsTheContextSmall(t *testing.T) {
	lines := strings.Split(readRoot(t, ".dockerignore"), "\n")
	for _, want := range []string{".git", ".gate-run", "**/node_modules", "gate-console/ui/screenshots", "gate-console/webapp/dist"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	for _, l := range lines {
		if l == "gate-console/ui" || l == "libs" || l == "migrations" || strings.HasPrefix(l, "*.go") {
			t.Errorf(".dockerignore drops %s, which the image build needs", l)
		}
	}
}

// TestUIStageHasEveryImportedFile: a file the web app imports from outside
// gate-console/ui must be copied into the ui stage, or `npm run build`
// fails in the image while it passes in the worktree.
func TestUIStageHasEveryImportedFile(t *testing.T) {
	df := readRoot(t, "Dockerfile")
	ui, err := filepath.Abs(filepath.Join("..", "gate-console", "ui"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(ui))
	imp := regexp.MustCompile(`(?m)^import[^"']*["'](\.{1,2}/[^"']+)["']`)
	found := 0
	err = filepath.WalkDir(filepath.Join(ui, "src"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".ts") || strings.HasSuffix(path, ".tsx")) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range imp.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Clean(filepath.Join(filepath.Dir(path), m[1]))
			if strings.HasPrefix(target, ui+string(filepath.Separator)) {
				continue
			}
			found++
			rel, _ := filepath.Rel(root, target)
			if !slices.Contains(strings.Split(df, "\n"), "COPY "+rel+" /src/"+rel) {
				t.Errorf("%s imports %s, which the Dockerfile's ui stage does not copy (COPY %s /src/%s)", path, rel, rel, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("found no import from outside gate-console/ui; the scan is broken (src/lib/schema.ts imports libs/schema)")
	}
}
