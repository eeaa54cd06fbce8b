package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is a refusal with its HTTP status and JSON body. The body always
// carries "error" (a sentence naming the number, the consequence and the
// fix); "rule", "field" and other keys are added where they help a client.
type apiError struct {
	status int
	body   map[string]any
	header http.Header
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %v", e.status, e.body["error"]) }

// fail builds a refusal; args format the message like fmt.Sprintf.
func fail(status int, format string, args ...any) *apiError {
	return &apiError{status: status, body: map[string]any{"error": fmt.Sprintf(format, args...)}}
}

// with adds one key to the body.
func (e *apiError) with(key string, v any) *apiError {
	e.body[key] = v
	return e
}

// field names the request field at fault.
func (e *apiError) field(name string) *apiError { return e.with("field", name) }

// retryAfter sets the Retry-After header (whole seconds).
func (e *apiError) retryAfter(seconds int64) *apiError {
	if e.header == nil {
		e.header = http.Header{}
	}
	e.header.Set("Retry-After", strconv.FormatInt(seconds, 10))
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"encoding the answer failed"}` + "\n")
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

var jsonContentType = []string{"application/json"}

func writeError(w http.ResponseWriter, e *apiError) {
	for k, v := range e.header {
		w.Header()[k] = v
	}
	writeJSON(w, e.status, e.body)
}
