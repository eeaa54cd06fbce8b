package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrShape is the sentinel every v1 parse failure wraps: the body is not a
// well-formed v1 document (an unknown field, a missing required field, or a
// value of the wrong type). Callers branch on it with errors.Is.
var ErrShape = errors.New("not a valid v1 document")

// ShapeError names the JSON pointer of the first v1 field that could not be
// read and what is wrong with it. It wraps ErrShape.
type ShapeError struct {
	// At is the JSON pointer into the submitted v1 body ("" is the whole body).
	At string
	// Problem says what is wrong and how to fix it.
	Problem string
}

// Error renders the pointer and the problem.
func (e *ShapeError) Error() string {
	at := e.At
	if at == "" {
		at = "/"
	}
	return fmt.Sprintf("v1 document at %s: %s", at, e.Problem)
}

// Unwrap returns ErrShape.
func (e *ShapeError) Unwrap() error { return ErrShape }

func shapeErr(at, format string, args ...any) error {
	return &ShapeError{At: at, Problem: fmt.Sprintf(format, args...)}
}

// pointer appends one reference token to a JSON pointer, escaping "~" and
// "/" as RFC 6901 requires.
func pointer(base string, token any) string {
	s := fmt.Sprint(token)
	s = strings.ReplaceAll(s, "~", "~0")
	s = strings.ReplaceAll(s, "/", "~1")
	return base + "/" + s
}

// object is one JSON object of the v1 body, read with its location so that
// every error can name the pointer of the offending field.
type object struct {
	at     string
	what   string
	fields map[string]json.RawMessage
}

// readObject decodes raw as a JSON object whose keys must all be in allowed.
func readObject(raw json.RawMessage, at, what string, allowed ...string) (*object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, shapeErr(at, "a v1 %s must be a JSON object, got %s", what, describe(raw))
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, shapeErr(at, "a v1 %s must be a JSON object: %v", what, err)
	}
	ok := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		ok[a] = true
	}
	for _, k := range sortedKeys(fields) {
		if !ok[k] {
			return nil, shapeErr(pointer(at, k),
				"unknown field %q in a v1 %s; the allowed fields are %s (a v1 shape rejects anything else)",
				k, what, strings.Join(allowed, ", "))
		}
	}
	return &object{at: at, what: what, fields: fields}, nil
}

// raw returns the field's bytes, treating JSON null as absent.
func (o *object) raw(key string) (json.RawMessage, bool) {
	r, ok := o.fields[key]
	if !ok {
		return nil, false
	}
	r = bytes.TrimSpace(r)
	if bytes.Equal(r, []byte("null")) {
		return nil, false
	}
	return r, true
}

func (o *object) has(key string) bool {
	_, ok := o.raw(key)
	return ok
}

func (o *object) ptr(key string) string { return pointer(o.at, key) }

func (o *object) missing(key, kind string) error {
	return shapeErr(o.ptr(key), "a v1 %s requires %q (%s)", o.what, key, kind)
}

// decode reads an optional field into dst; it reports whether the field was present.
func (o *object) decode(key, kind string, dst any) (bool, error) {
	r, ok := o.raw(key)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(r, dst); err != nil {
		return true, shapeErr(o.ptr(key), "%q of a v1 %s must be %s, got %s", key, o.what, kind, describe(r))
	}
	return true, nil
}

// need reads a required field into dst.
func (o *object) need(key, kind string, dst any) error {
	ok, err := o.decode(key, kind, dst)
	if err != nil {
		return err
	}
	if !ok {
		return o.missing(key, kind)
	}
	return nil
}

// name reads the document's "name": required, unless the route names the
// document (routeName), when it is optional and the route's name wins.
func (o *object) name(routeName bool, dst *string) error {
	if routeName {
		_, err := o.decode("name", "a string", dst)
		return err
	}
	return o.need("name", "a string", dst)
}

// enum reads an optional string field restricted to the listed values.
func (o *object) enum(key string, values ...string) (string, bool, error) {
	kind := "one of " + strings.Join(quoteAll(values), ", ")
	var s string
	ok, err := o.decode(key, "a string, "+kind, &s)
	if err != nil || !ok {
		return "", ok, err
	}
	for _, v := range values {
		if s == v {
			return s, true, nil
		}
	}
	return "", true, shapeErr(o.ptr(key), "%q of a v1 %s must be %s, got %q", key, o.what, kind, s)
}

// list reads an optional JSON array and returns its raw elements.
func (o *object) list(key, kind string) ([]json.RawMessage, bool, error) {
	var items []json.RawMessage
	ok, err := o.decode(key, "an array of "+kind, &items)
	return items, ok, err
}

func describe(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	const most = 32
	if len(raw) > most {
		return "the number " + string(raw[:most]) + "…"
	}
	return "the number " + string(raw)
}

func quoteAll(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
