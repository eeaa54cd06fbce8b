package cost

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// Charge is one charging hop of an item, as its stamp records it for a
// settle (POST …/nodes/{node}/settle): the node that charged, the
// estimated cost it charged to each of the budgets the item touched, and
// the window each budget's counter was charged in.
type Charge struct {
	// Node is the node whose budgets were charged.
	Node string
	// Cost is the estimated cost charged to each of them.
	Cost int64
	// At is when the relay charged, epoch milliseconds (its clock).
	At int64
	// Windows holds, per counter the item touched (the node's budgets that
	// apply to it, in declaration order, one per distinct key), the end of
	// the window the charge landed in as the relay knew it when it charged,
	// epoch milliseconds of the broker's clock; 0 is unknown. A relay that
	// learns after its commit that a window differs from what it wrote
	// leaves the true one in the claim's correction row (Row).
	Windows []int64
	// Row names the claim's correction row (budget.CorrectionKey).
	Row string
}

// AppendCharges appends charges as the stamp's "charges" array.
func AppendCharges(b []byte, charges []Charge) []byte {
	b = append(b, '[')
	for i := range charges {
		if i > 0 {
			b = append(b, ',')
		}
		b = charges[i].AppendJSON(b)
	}
	return append(b, ']')
}

// AppendJSON appends one charge as a JSON object.
func (c Charge) AppendJSON(b []byte) []byte {
	b = append(b, `{"node":`...)
	b = jsonkit.AppendString(b, c.Node)
	b = append(b, `,"cost":`...)
	b = strconv.AppendInt(b, c.Cost, 10)
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, c.At, 10)
	b = append(b, `,"windows":[`...)
	for i, w := range c.Windows {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, w, 10)
	}
	b = append(b, `],"row":`...)
	b = jsonkit.AppendString(b, c.Row)
	return append(b, '}')
}

// MaxCharges is the most charging hops a stamp carries; a relay drops the
// oldest beyond it (a path this long is far beyond any declared one).
const MaxCharges = 16

// stampJSON is the stamp as encoding/json reads it (ParseStamp).
type stampJSON struct {
	Graph   *string      `json:"graph"`
	Path    string       `json:"path"`
	Hop     *int         `json:"hop"`
	Node    *string      `json:"node"`
	At      *int64       `json:"at"`
	Attempt *int64       `json:"attempt"`
	Charges []chargeJSON `json:"charges"`
	Sig     string       `json:"sig"`
}

type chargeJSON struct {
	Node    *string `json:"node"`
	Cost    *int64  `json:"cost"`
	At      *int64  `json:"at"`
	Windows []int64 `json:"windows"`
	Row     *string `json:"row"`
}

// ErrStamp is wrapped by every ParseStamp error.
var ErrStamp = errors.New("not a Gate stamp")

// ParseStamp reads a `_gate` object (raw JSON) strictly: every member of
// the stamp and of each charge is known, the required ones are present.
func ParseStamp(raw []byte) (GateStamp, error) {
	var j stampJSON
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return GateStamp{}, fmt.Errorf("%w: %w", ErrStamp, err)
	}
	if d.More() {
		return GateStamp{}, fmt.Errorf("%w: data after the object", ErrStamp)
	}
	if j.Graph == nil || j.Hop == nil || j.Node == nil || j.At == nil {
		return GateStamp{}, fmt.Errorf("%w: graph, hop, node and at are required", ErrStamp)
	}
	if len(j.Charges) > MaxCharges {
		return GateStamp{}, fmt.Errorf("%w: %d charges, over %d", ErrStamp, len(j.Charges), MaxCharges)
	}
	st := GateStamp{Graph: *j.Graph, Path: j.Path, Hop: *j.Hop, Node: *j.Node, At: *j.At, Sig: j.Sig}
	if j.Attempt != nil {
		st.Attempt, st.HasAttempt = *j.Attempt, true
	}
	for i, c := range j.Charges {
		if c.Node == nil || c.Cost == nil || c.At == nil || c.Row == nil || c.Windows == nil {
			return GateStamp{}, fmt.Errorf("%w: charge %d lacks node, cost, at, windows or row", ErrStamp, i)
		}
		st.Charges = append(st.Charges, Charge{Node: *c.Node, Cost: *c.Cost, At: *c.At, Windows: c.Windows, Row: *c.Row})
	}
	return st, nil
}

// StampOf returns the raw `_gate` member of a payload (the last one, as a
// decoder keeps), or false when it has none.
func StampOf(payload []byte) ([]byte, bool) {
	return Lookup(payload, Root+"."+Stamp)
}

// SigLen is the length of a signature as written: 16 bytes of
// HMAC-SHA256, unpadded base64url.
const SigLen = 22

// Signer signs and verifies stamps with the fleet's key: HMAC-SHA256 over
// the stamp as AppendSigned writes it, then, each after a zero byte, the
// application and the transaction id the item was pushed with, cut to 16
// bytes. A stamp copied onto another message or application, or altered
// in any member, no longer verifies. Safe for
// concurrent use.
type Signer struct {
	pool sync.Pool
}

// MinKeyBytes is the shortest key NewSigner takes.
const MinKeyBytes = 32

// NewSigner returns a Signer of key (at least MinKeyBytes).
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the stamp key is %d bytes; it must be at least %d", len(key), MinKeyBytes)
	}
	k := bytes.Clone(key)
	s := &Signer{}
	s.pool.New = func() any { return &macState{h: hmac.New(sha256.New, k)} }
	return s, nil
}

// macState is one pooled HMAC with its scratch, so a signature costs no
// allocation.
type macState struct {
	h   hash.Hash
	buf [160]byte
	sum [sha256.Size]byte
}

// mac writes the 16-byte signature of signed, app and txn into out.
func (s *Signer) mac(out *[16]byte, signed []byte, app, txn string) {
	m := s.pool.Get().(*macState)
	m.h.Reset()
	m.h.Write(signed)
	tail := append(append(append(append(m.buf[:0], 0), app...), 0), txn...)
	m.h.Write(tail)
	copy(out[:], m.h.Sum(m.sum[:0]))
	s.pool.Put(m)
}

// AppendSig appends the signature of signed (the stamp's AppendSigned
// bytes) for application app and transaction id txn to dst, base64url
// without padding. signed may alias dst.
func (s *Signer) AppendSig(dst, signed []byte, app, txn string) []byte {
	var sum [16]byte
	s.mac(&sum, signed, app, txn)
	return base64.RawURLEncoding.AppendEncode(dst, sum[:])
}

// Verify reports whether st carries the signature its members, app and
// txn have.
func (s *Signer) Verify(st GateStamp, app, txn string) bool {
	if len(st.Sig) != SigLen {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(st.Sig)
	if err != nil {
		return false
	}
	var sum [16]byte
	s.mac(&sum, st.AppendSigned(nil), app, txn)
	return hmac.Equal(got, sum[:])
}
