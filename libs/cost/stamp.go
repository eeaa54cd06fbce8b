package cost

import (
	"strconv"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// GateStamp is the `_gate` object Gate writes on every item it stores: at
// the push front door (hop 0) and on every relayed push. This is its one
// encoder; gate-api and gate-relay both write it through AppendJSON.
type GateStamp struct {
	// Graph, Path and Node name where the item is going; Path is omitted
	// when empty (the front door before a path is known).
	Graph, Path string
	// Hop is the hop index the item enters.
	Hop  int
	Node string
	// At is epoch milliseconds.
	At int64
	// Attempt is the re-entry attempt, written when HasAttempt.
	Attempt    int64
	HasAttempt bool
}

// AppendJSON appends the stamp as a JSON object to b.
func (s GateStamp) AppendJSON(b []byte) []byte {
	return s.AppendTail(s.AppendHead(b))
}

// AppendHead appends the stamp without its attempt and closing brace: the
// part every item of one settle shares, so a relay encodes it once.
func (s GateStamp) AppendHead(b []byte) []byte {
	b = append(b, `{"graph":`...)
	b = jsonkit.AppendString(b, s.Graph)
	if s.Path != "" {
		b = append(b, `,"path":`...)
		b = jsonkit.AppendString(b, s.Path)
	}
	b = append(b, `,"hop":`...)
	b = strconv.AppendInt(b, int64(s.Hop), 10)
	b = append(b, `,"node":`...)
	b = jsonkit.AppendString(b, s.Node)
	b = append(b, `,"at":`...)
	return strconv.AppendInt(b, s.At, 10)
}

// AppendTail appends the attempt (when HasAttempt) and the closing brace
// after a head.
func (s GateStamp) AppendTail(b []byte) []byte {
	if s.HasAttempt {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, s.Attempt, 10)
	}
	return append(b, '}')
}
