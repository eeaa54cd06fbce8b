package cost

import (
	"bytes"
	"strconv"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// GateStamp is the `_gate` object Gate writes on every item it stores: at
// the push front door (hop 0) and on every relayed push. This is its one
// encoder and AppendStamped its one splice into a payload; gate-api,
// gate-relay and gate-bench write it through them.
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
	// Charges are the charging hops the item went through, oldest first
	// (written by the relays; see Charge). Omitted when empty.
	Charges []Charge
	// Sig is the stamp's signature (Signer), read by ParseStamp; a stamp
	// with charges is written signed and nothing else is.
	Sig string
}

// AppendJSON appends the stamp as a JSON object to b, its signature
// included when Sig is set.
func (s GateStamp) AppendJSON(b []byte) []byte {
	b = s.AppendSigned(b)
	if s.Sig != "" {
		b = append(b, `,"sig":`...)
		b = jsonkit.AppendString(b, s.Sig)
	}
	return append(b, '}')
}

// AppendSigned appends what a signature covers: the stamp as AppendJSON
// writes it, without its signature and closing brace.
func (s GateStamp) AppendSigned(b []byte) []byte {
	b = s.AppendHead(b)
	if len(s.Charges) > 0 {
		b = append(b, `,"charges":`...)
		b = AppendCharges(b, s.Charges)
	}
	return s.appendAttempt(b)
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
	return append(s.appendAttempt(b), '}')
}

func (s GateStamp) appendAttempt(b []byte) []byte {
	if s.HasAttempt {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, s.Attempt, 10)
	}
	return b
}

// Splice says how AppendStamped writes a stamp into a payload. The zero
// Splice writes the stamp as it is, encoded for the one payload.
type Splice struct {
	// Head is the stamp's AppendHead encoding when many payloads get the
	// same stamp (a settle, a bench claim encodes it once); nil encodes
	// the stamp for each payload.
	Head []byte
	// KeepAttempt carries the payload's own re-entry count forward (a
	// relayed push): a non-negative integer `_gate.attempt` of the
	// payload's last `_gate` member replaces the stamp's Attempt. Without
	// one, or without KeepAttempt, the stamp's Attempt stands.
	KeepAttempt bool
	// Op, when not empty, is written as the member "op", after every
	// other member and before the stamp, and replaces any "op" the payload
	// had (the push door's op).
	Op string
	// Charges, when not empty, is the stamp's "charges" array as
	// AppendCharges encodes it (the item's own; the stamp's Charges field
	// is not read when Head is set). A stamp with charges is signed with
	// Signer over the stamp, App and Txn, the transaction id the item is
	// pushed with; a nil Signer writes none.
	Charges []byte
	Signer  *Signer
	App     string
	Txn     string
}

// AppendStamped appends data, which must be one valid JSON value, to dst
// with the stamp written in, and reports true, when data is an object
// (white space around it allowed); for anything else (an array, a scalar,
// null) it returns dst unchanged and false, and the caller forwards data
// as it is. Many payloads can share one dst.
//
// The object is spliced, not re-encoded: every other member is copied byte
// for byte (values are never decoded; white space inside a member is kept,
// between members dropped), each `_gate` member is dropped, and the stamp
// is appended as the last member: `"_gate":{…}`, after `"op":…` when
// how.Op is set.
func (s GateStamp) AppendStamped(dst, data []byte, how Splice) ([]byte, bool) {
	obj := bytes.TrimSpace(data)
	if len(obj) == 0 || obj[0] != '{' {
		return dst, false
	}
	out := append(dst, '{')
	members := 0
	// The incoming stamp is the last `_gate` member, as a decoder keeps
	// the last of duplicate keys.
	var incoming []byte
	for m, ok := jsonkit.NextMember(obj, 1); ok; m, ok = jsonkit.NextMember(obj, m.ValueEnd) {
		key := obj[m.KeyStart:m.KeyEnd]
		switch {
		case isKey(key, Stamp):
			incoming = obj[m.ValueStart:m.ValueEnd]
		case how.Op != "" && isKey(key, "op"):
		default:
			if members > 0 {
				out = append(out, ',')
			}
			out = append(out, obj[m.KeyStart:m.ValueEnd]...)
			members++
		}
	}
	if how.KeepAttempt && incoming != nil {
		if raw, ok := Lookup(incoming, Root+".attempt"); ok {
			if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n >= 0 {
				s.Attempt, s.HasAttempt = n, true
			}
		}
	}
	if members > 0 {
		out = append(out, ',')
	}
	if how.Op != "" {
		out = append(out, `"op":`...)
		out = jsonkit.AppendString(out, how.Op)
		out = append(out, ',')
	}
	out = append(out, `"`+Stamp+`":`...)
	if how.Head == nil && len(how.Charges) == 0 {
		return append(s.AppendJSON(out), '}'), true
	}
	start := len(out)
	if how.Head != nil {
		out = append(out, how.Head...)
	} else {
		out = s.AppendHead(out)
	}
	if len(how.Charges) > 0 {
		out = append(out, `,"charges":`...)
		out = append(out, how.Charges...)
	}
	out = s.appendAttempt(out)
	if len(how.Charges) > 0 && how.Signer != nil {
		out = append(out, `,"sig":"`...)
		out = how.Signer.AppendSig(out, out[start:len(out)-len(`,"sig":"`)], how.App, how.Txn)
		out = append(out, '"')
	}
	return append(out, '}', '}'), true
}

// isKey reports whether tok, a member's key as written (quotes and escapes
// included), names name.
func isKey(tok []byte, name string) bool {
	if len(tok) == len(name)+2 && string(tok[1:len(tok)-1]) == name {
		return true
	}
	if bytes.IndexByte(tok, '\\') < 0 {
		return false
	}
	var buf [16]byte
	k, ok := jsonkit.Unquote(buf[:0], tok)
	return ok && string(k) == name
}
