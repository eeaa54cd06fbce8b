package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/queen-mq/gate/libs/wire"
)

// readBody reads a JSON request body of at most limit bytes: 415 without a
// JSON content type, 413 above the limit, 400 when it is empty or not JSON.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *Refusal) {
	b, bad := readRaw(w, r, limit)
	if bad != nil {
		return nil, bad
	}
	if !json.Valid(b) {
		return nil, Refuse(http.StatusBadRequest, wire.CodeInvalidJSON, "the body is not valid JSON (%s): send one JSON value", syntaxProblem(b))
	}
	return b, nil
}

// readRaw is readBody without the JSON check, for bodies DecodeStrict
// parses anyway (it answers 400 for broken JSON itself).
func readRaw(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *Refusal) {
	if ct := r.Header.Get("Content-Type"); !jsonType(ct) {
		if ct == "" {
			ct = "none"
		}
		return nil, Refuse(http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType, "Content-Type is %s: send the body as JSON with the header Content-Type: application/json", ct).Field("Content-Type")
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	b, err := readAllSized(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, tooLarge(limit)
		}
		return nil, Refuse(http.StatusBadRequest, wire.CodeBodyUnreadable, "reading the body failed: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, Refuse(http.StatusBadRequest, wire.CodeEmptyBody, "the body is empty: send a JSON object")
	}
	return b, nil
}

// readAllSized reads r to the end into one buffer of the announced size
// when it is known (n > 0), so a large body is not copied while growing.
func readAllSized(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, n+1)
	for {
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func tooLarge(limit int64) *Refusal {
	return Refuse(http.StatusRequestEntityTooLarge, wire.CodeBodyTooLarge, "the body is larger than this route's limit of %d bytes: send less per request (push routes take GATE_MAX_PUSH_BODY_BYTES, 2–64 MiB; other routes 2 MiB)", limit).Limit(limit)
}

func jsonType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// syntaxProblem says where a body stops being JSON.
func syntaxProblem(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("at byte %d: %v", se.Offset, se)
	}
	if err != nil {
		return err.Error()
	}
	return "unknown problem"
}

// DecodeStrict decodes a JSON object into dst, refusing unknown fields
// (case-sensitively), keys given twice, invalid UTF-8 and values of the
// wrong type with a 422 that names the field: every body a handler decodes
// (push, re-enter, backoff) is read as strictly as a declared document. what names the
// body in messages ("the push body").
func DecodeStrict(b []byte, dst any, what string) *Refusal {
	if t := FirstByte(b); t != '{' {
		if !json.Valid(b) {
			return Refuse(http.StatusBadRequest, wire.CodeInvalidJSON, "the body is not valid JSON (%s): send one JSON value", syntaxProblem(b))
		}
		return Refuse(http.StatusUnprocessableEntity, wire.CodeWrongType, "%s must be a JSON object, not %s", what, KindOf(t))
	}
	if !json.Valid(b) {
		return Refuse(http.StatusBadRequest, wire.CodeInvalidJSON, "the body is not valid JSON (%s): send one JSON value", syntaxProblem(b))
	}
	if bad := strictScan(b, shapeOf(reflect.TypeOf(dst)), what); bad != nil {
		return bad
	}
	// strictScan refused unknown fields exactly, and json.Valid trailing
	// data, so a plain Unmarshal does the rest without copying the body
	// into a decoder's buffer (a payload field of type rawPayload keeps a
	// slice of b).
	err := json.Unmarshal(b, dst)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Refuse(http.StatusBadRequest, wire.CodeInvalidJSON, "the body is not valid JSON (%s): send one JSON value", syntaxProblem(b))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		name := te.Field
		if name == "" {
			name = "(root)"
		}
		return Refuse(http.StatusUnprocessableEntity, wire.CodeWrongType, "%s: field %q must be %s, not %s", what, name, expectedKind(te.Type.String()), te.Value).Field(name)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownField, "%s has an unknown field %q: remove it (field names are case-sensitive)", what, name).Field(name)
	}
	return Refuse(http.StatusUnprocessableEntity, wire.CodeWrongType, "%s: %v", what, err)
}

// FirstByte is the first byte of b that is not white space (0 when none):
// what kind of JSON value b holds.
func FirstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// KindOf names the kind of JSON value whose first byte is c ("an array",
// "a string", …; "nothing" for 0).
func KindOf(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '{':
		return "an object"
	case c == 0:
		return "nothing"
	}
	return "a number"
}

func expectedKind(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "string":
		return "a string"
	case "int64", "int", "uint32", "uint64", "int32":
		return "a whole number"
	case "bool":
		return "a boolean"
	}
	return "a " + goType
}
