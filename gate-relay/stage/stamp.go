package stage

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/queen-mq/gate/libs/cost"
)

// Stamp describes the `_gate` object written on every relayed push.
type Stamp struct {
	Graph string
	Path  string
	// Hop is the stage's hop index + 1.
	Hop int
	// Node is the destination node (the stage's own node on a terminal push).
	Node string
	// At is epoch milliseconds.
	At int64
}

// Apply returns data with its `_gate` key replaced by the stamp when data
// is a JSON object; anything else (arrays, scalars, null, invalid JSON) is
// returned unchanged. A non-negative integer `_gate.attempt` of the
// incoming data is carried forward; every other `_gate` content is
// overwritten.
func (s Stamp) Apply(data []byte) []byte {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return data
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return data
	}
	attempt, hasAttempt := int64(0), false
	if raw, ok := cost.Lookup(trimmed, cost.Root+"."+cost.Stamp+".attempt"); ok {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n >= 0 {
			attempt, hasAttempt = n, true
		}
	}
	g := make([]byte, 0, 128)
	g = append(g, `{"graph":`...)
	g = strconv.AppendQuote(g, s.Graph)
	g = append(g, `,"path":`...)
	g = strconv.AppendQuote(g, s.Path)
	g = append(g, `,"hop":`...)
	g = strconv.AppendInt(g, int64(s.Hop), 10)
	g = append(g, `,"node":`...)
	g = strconv.AppendQuote(g, s.Node)
	g = append(g, `,"at":`...)
	g = strconv.AppendInt(g, s.At, 10)
	if hasAttempt {
		g = append(g, `,"attempt":`...)
		g = strconv.AppendInt(g, attempt, 10)
	}
	g = append(g, '}')
	obj[cost.Stamp] = g
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return data
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// stampedPath returns the `_gate.path` string of data, if any.
func stampedPath(data []byte) (string, bool) {
	raw, ok := cost.Lookup(data, cost.Root+"."+cost.Stamp+".path")
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
