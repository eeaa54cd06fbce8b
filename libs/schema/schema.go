package schema

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed graph.schema.json
var graphSchema []byte

// URL is the schema's $id.
const URL = "https://github.com/queen-mq/gate/libs/schema/graph.schema.json"

// MaxDraftBytes is the drafting assistant's bound on a serialised draft.
const MaxDraftBytes = 48_000

// printer renders the library's violation texts.
var printer = message.NewPrinter(language.English)

// maxListed bounds how many violations Error renders; Violations keeps all.
const maxListed = 5

// ErrInvalid is the sentinel every validation failure wraps: the document
// does not match the v2 graph schema. Callers branch on it with errors.Is.
var ErrInvalid = errors.New("document does not match the v2 graph schema")

// JSON returns the JSON Schema (draft 2020-12) of the v2 graph document. The
// caller owns the returned copy.
func JSON() []byte { return bytes.Clone(graphSchema) }

// Violation is one place where a document breaks the schema.
type Violation struct {
	// At is the JSON pointer of the offending value ("" is the whole
	// document). For a missing or unknown field it is the field's own pointer.
	At string
	// Problem says what is wrong there.
	Problem string
}

// ValidationError lists every violation, ordered by pointer then problem, so
// the same document always reports the same first violation. It wraps ErrInvalid.
type ValidationError struct {
	Violations []Violation
}

// Error names the first few violations with their pointers.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("graph document does not match the v2 schema: ")
	for i, v := range e.Violations {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(e.Violations)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		at := v.At
		if at == "" {
			at = "/"
		}
		fmt.Fprintf(&b, "at %s: %s", at, v.Problem)
	}
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

type compiled struct {
	graph, draft *jsonschema.Schema
	err          error
}

var load = sync.OnceValue(func() compiled {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(graphSchema))
	if err != nil {
		return compiled{err: fmt.Errorf("schema: reading the embedded graph schema: %w", err)}
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(URL, doc); err != nil {
		return compiled{err: fmt.Errorf("schema: adding the embedded graph schema: %w", err)}
	}
	graph, err := c.Compile(URL)
	if err != nil {
		return compiled{err: fmt.Errorf("schema: compiling the graph schema: %w", err)}
	}
	draft, err := c.Compile(URL + "#/$defs/draft")
	if err != nil {
		return compiled{err: fmt.Errorf("schema: compiling the draft schema: %w", err)}
	}
	return compiled{graph: graph, draft: draft}
})

// Validate checks doc against the v2 graph schema. It returns nil for a
// matching document, a *ValidationError (wrapping ErrInvalid) naming the JSON
// pointer of each violation, or an error wrapping ErrInvalid when doc is not
// JSON at all. The schema is compiled once, on first use.
func Validate(doc []byte) error {
	c := load()
	if c.err != nil {
		return c.err
	}
	return validate(c.graph, doc)
}

// ValidateDraft checks doc against the drafting assistant's stricter limits:
// the graph schema plus version 1, at most 20 nodes, at most 20 paths, no
// watch.startedAt, and at most MaxDraftBytes bytes.
func ValidateDraft(doc []byte) error {
	if len(doc) > MaxDraftBytes {
		return &ValidationError{Violations: []Violation{{
			At:      "",
			Problem: fmt.Sprintf("a draft is %d bytes, above the %d-byte bound; split the graph or trim descriptions", len(doc), MaxDraftBytes),
		}}}
	}
	c := load()
	if c.err != nil {
		return c.err
	}
	return validate(c.draft, doc)
}

func validate(s *jsonschema.Schema, doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%w: the body is not JSON: %v", ErrInvalid, err)
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	seen := map[Violation]bool{}
	var out []Violation
	for _, v := range leaves(ve) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].At != out[j].At {
			return out[i].At < out[j].At
		}
		return out[i].Problem < out[j].Problem
	})
	return &ValidationError{Violations: out}
}

// leaves flattens the library's error tree into the innermost violations.
func leaves(e *jsonschema.ValidationError) []Violation {
	at := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Contains:
		if strings.HasSuffix(at, "/budgets") {
			return []Violation{{At: at, Problem: "no unconditional budget: a node outside watch needs one budget with neither scopeBy nor whenOp (rule node-unscoped-budget)"}}
		}
	case *kind.PropertyNames:
		return []Violation{{At: at + "/" + escape(k.Property), Problem: fmt.Sprintf("name %q breaks the name rule: 1 to 63 of [a-z0-9-], starting with [a-z0-9] (it becomes part of queue, group and kv names)", k.Property)}}
	case *kind.OneOf, *kind.AnyOf:
		return alternatives(e, at)
	}
	if len(e.Causes) > 0 {
		var out []Violation
		for _, c := range e.Causes {
			out = append(out, leaves(c)...)
		}
		return out
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		out := make([]Violation, 0, len(k.Properties))
		for _, p := range k.Properties {
			out = append(out, Violation{At: at + "/" + escape(p), Problem: fmt.Sprintf("unknown field %q: every object of the document rejects fields it does not define", p)})
		}
		return out
	case *kind.Required:
		out := make([]Violation, 0, len(k.Missing))
		for _, p := range k.Missing {
			out = append(out, Violation{At: at + "/" + escape(p), Problem: fmt.Sprintf("required field %q is missing", p)})
		}
		return out
	case *kind.MaxContains:
		if strings.HasSuffix(at, "/nodes") {
			return []Violation{{At: at, Problem: "more than one fan-out: only the last element of a path may be a fan-out (rule fanout-terminal)"}}
		}
	case *kind.Type:
		return []Violation{{At: at, Problem: typeProblem(k.Got, k.Want)}}
	}
	return []Violation{{At: at, Problem: e.ErrorKind.LocalizedString(printer)}}
}

// alternatives explains a failed oneOf/anyOf (cost, ingress, egress, a path
// element). A branch whose only complaint is the value's type is noise when
// another branch accepted the type and failed deeper; when every branch
// refused the type, the wanted types are merged into one violation.
func alternatives(e *jsonschema.ValidationError, at string) []Violation {
	var deeper []Violation
	var got string
	var want []string
	for _, c := range e.Causes {
		if t, ok := typeOnly(c); ok && pointer(c.InstanceLocation) == at {
			got = t.Got
			want = append(want, t.Want...)
			continue
		}
		deeper = append(deeper, leaves(c)...)
	}
	if len(deeper) > 0 {
		return deeper
	}
	if len(want) > 0 {
		return []Violation{{At: at, Problem: typeProblem(got, want)}}
	}
	return []Violation{{At: at, Problem: e.ErrorKind.LocalizedString(printer)}}
}

// typeOnly reports whether e (through $ref wrappers) is just a type mismatch.
func typeOnly(e *jsonschema.ValidationError) (*kind.Type, bool) {
	for {
		if t, ok := e.ErrorKind.(*kind.Type); ok {
			return t, true
		}
		if len(e.Causes) != 1 {
			return nil, false
		}
		e = e.Causes[0]
	}
}

func typeProblem(got string, want []string) string {
	return fmt.Sprintf("got %s, want %s", got, strings.Join(want, " or "))
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
