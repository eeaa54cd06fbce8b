package wire

import (
	"regexp"
	"testing"

	"github.com/queen-mq/gate/libs/wire/internal/tsgen"
)

// Every Code constant is in Codes exactly once with at least one status,
// Codes holds nothing else, and every code is kebab-case with a doc comment
// saying what it means (the README's table shows it).
func TestCodesAreTheCatalogue(t *testing.T) {
	consts, err := tsgen.Constants(".")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[Code]string{}
	kebab := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	for _, c := range consts["Code"] {
		if _, dup := declared[Code(c.Value)]; dup {
			t.Errorf("%s repeats the code %q", c.Name, c.Value)
		}
		declared[Code(c.Value)] = c.Name
		if !kebab.MatchString(c.Value) {
			t.Errorf("%s = %q is not kebab-case", c.Name, c.Value)
		}
		if c.Meaning() == "" || c.Meaning() == c.Doc {
			t.Errorf("%s has no doc comment of the form %q", c.Name, c.Name+" means …")
		}
	}
	if len(declared) < 50 {
		t.Fatalf("only %d Code constants read: the scan is broken", len(declared))
	}
	listed := map[Code]bool{}
	for _, c := range Codes {
		if listed[c.Code] {
			t.Errorf("Codes lists %q twice", c.Code)
		}
		listed[c.Code] = true
		if _, ok := declared[c.Code]; !ok {
			t.Errorf("Codes lists %q, which no constant declares", c.Code)
		}
		if len(c.Statuses) == 0 {
			t.Errorf("%q has no status", c.Code)
		}
		for _, s := range c.Statuses {
			if s < 400 || s > 599 || !c.Code.Known(s) {
				t.Errorf("%q: status %d is not a refusal's", c.Code, s)
			}
		}
	}
	for code, name := range declared {
		if !listed[code] {
			t.Errorf("%s (%q) is not in Codes", name, code)
		}
	}
	if Code("no-such-code").Known(0) || CodeGraphNotFound.Known(409) || !CodeGraphNotFound.Known(404) || !CodeDeclareRefused.Known(0) {
		t.Error("Known does not answer from the catalogue")
	}
}
