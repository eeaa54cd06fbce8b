package schema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidate checks that no input panics the validator and that every
// refusal wraps ErrInvalid with JSON pointers.
func FuzzValidate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "valid", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte(`{"version":1,"nodes":{"a~/b":{}},"paths":[{"name":"x","nodes":[["a"],["b","c"]]}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := Validate(doc)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%v does not wrap ErrInvalid", err)
		}
		var ve *ValidationError
		if errors.As(err, &ve) {
			if len(ve.Violations) == 0 {
				t.Fatal("a ValidationError with no violations")
			}
			for _, v := range ve.Violations {
				if v.At != "" && !strings.HasPrefix(v.At, "/") {
					t.Fatalf("At %q is not a JSON pointer", v.At)
				}
			}
		}
	})
}
