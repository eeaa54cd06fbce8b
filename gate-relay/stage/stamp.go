package stage

import (
	"encoding/json"

	"github.com/queen-mq/gate/internal/jsonkit"
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
	// head is the encoded stamp every item of a settle shares (see
	// prepare); nil encodes it per item.
	head []byte
}

// prepare encodes the shared part of the stamp once, for a settle that
// stamps many items with it.
func (s *Stamp) prepare() {
	s.head = cost.GateStamp{Graph: s.Graph, Path: s.Path, Hop: s.Hop, Node: s.Node, At: s.At}.AppendHead(nil)
}

// Apply returns data with its `_gate` key replaced by the stamp when data
// is a JSON object; anything else (arrays, scalars, null, invalid JSON) is
// returned unchanged. A non-negative integer `_gate.attempt` of the
// incoming data is carried forward; every other `_gate` content is
// overwritten.
//
// The object is spliced, not re-encoded (cost.GateStamp.AppendStamped):
// every other top-level member is copied byte for byte (values are never
// decoded), each `_gate` member is dropped and the new stamp is appended as
// the last member.
func (s Stamp) Apply(data []byte) []byte {
	out, ok := s.AppendTo(make([]byte, 0, len(data)+s.overhead()), data)
	if !ok {
		return data
	}
	return out
}

// overhead is about how many bytes the stamp adds to a payload.
func (s Stamp) overhead() int { return len(s.Graph) + len(s.Path) + len(s.Node) + 112 }

// AppendTo appends the stamped object (see Apply) to dst and reports true,
// or returns dst unchanged and false when data is not a JSON object — the
// caller then forwards data as it is. Many payloads can share one dst.
func (s Stamp) AppendTo(dst, data []byte) ([]byte, bool) {
	if !json.Valid(data) {
		return dst, false
	}
	return s.appendClaimed(dst, data)
}

// appendClaimed is AppendTo for data already known to be one valid JSON
// value, such as the Data of a claimed message (the client's decoder
// validated it): it is not scanned a second time.
func (s Stamp) appendClaimed(dst, data []byte) ([]byte, bool) {
	st := cost.GateStamp{Graph: s.Graph, Path: s.Path, Hop: s.Hop, Node: s.Node, At: s.At}
	return st.AppendStamped(dst, data, cost.Splice{Head: s.head, KeepAttempt: true})
}

// stampedPath returns the `_gate.path` string of data, if any.
func stampedPath(data []byte) (string, bool) {
	raw, ok := cost.Lookup(data, cost.Root+"."+cost.Stamp+".path")
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var buf [64]byte
	path, ok := jsonkit.Unquote(buf[:0], raw)
	return string(path), ok
}

// appendCharged is appendClaimed with the item's charge records (the
// "charges" array), signed for the transaction id txn it is pushed with.
func (s Stamp) appendCharged(dst, data, charges []byte, signer *cost.Signer, app, txn string) ([]byte, bool) {
	st := cost.GateStamp{Graph: s.Graph, Path: s.Path, Hop: s.Hop, Node: s.Node, At: s.At}
	return st.AppendStamped(dst, data, cost.Splice{Head: s.head, KeepAttempt: true, Charges: charges, Signer: signer, App: app, Txn: txn})
}
