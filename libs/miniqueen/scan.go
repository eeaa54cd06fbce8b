package miniqueen

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// The hot request shapes (push items, transaction operations) are read by
// scanPush and scanTxn on the one JSON scanner (internal/jsonkit), which
// fills each field as encoding/json would. Anything they do not expect
// makes them give up (ok=false) and the caller falls back to encoding/json,
// so behaviour and error messages stay those of the standard decoder.

// errFallBack makes a fast read give up and leave the body to
// encoding/json.
var errFallBack = errors.New("miniqueen: the fast reader leaves this body to encoding/json")

// reader is a Scanner of a request body with the arena its kept strings
// and raw values are copied into.
type reader struct {
	*jsonkit.Scanner
	ar *arena
}

func newReader(b []byte) reader {
	// Everything kept is a copy of (at most all of) the body's bytes, so
	// one allocation of the body's size holds every string and payload.
	return reader{Scanner: jsonkit.NewScanner(b), ar: &arena{b: make([]byte, 0, len(b))}}
}

// str reads a string into *dst (null leaves it unchanged).
func (r reader) str(dst *string) error {
	if r.Null() {
		return nil
	}
	t, err := r.Text()
	if err != nil {
		return err
	}
	*dst = r.ar.str(t)
	return nil
}

// same is str for values that repeat: when the value equals *prev, *dst
// gets *prev without a copy (acks and pushes of one bundle repeat their
// group, lease, partition and queue names), else the copy becomes *prev.
func (r reader) same(dst, prev *string) error {
	if r.Null() {
		return nil
	}
	t, err := r.Text()
	if err != nil {
		return err
	}
	if string(t) != *prev {
		*prev = r.ar.str(t)
	}
	*dst = *prev
	return nil
}

// optStr reads a string into *dst, a pointer field: null sets it to nil.
// With prev not nil, the string is read with same.
func (r reader) optStr(dst **string, prev *string) error {
	if r.Null() {
		*dst = nil
		return nil
	}
	var v string
	var err error
	if prev != nil {
		err = r.same(&v, prev)
	} else {
		err = r.str(&v)
	}
	if err != nil {
		return err
	}
	*dst = &v
	return nil
}

// raw reads a value (null included) into the arena.
func (r reader) raw(dst *rawJSON) error {
	v, err := r.Raw()
	*dst = r.ar.keep(v)
	return err
}

// skipUnknown skips the value of a key the fast path does not know; a key
// that encoding/json would match case-insensitively to a known one makes
// the reader give up, so both decoders agree.
func (r reader) skipUnknown(k []byte, known ...string) error {
	for _, kn := range known {
		if strings.EqualFold(string(k), kn) {
			return errFallBack
		}
	}
	return r.Skip()
}

var pushKeys = []string{"queue", "partition", "payload", "data", "transactionId", "traceId"}

var txnOpKeys = []string{"type", "items", "queue", "partition", "payload", "data", "transactionId", "traceId", "partitionId", "leaseId", "consumerGroup", "status", "error"}

// arena copies raw payloads and strings into one allocation per request.
// Bytes written to it are never modified again, which is what makes the
// strings it returns valid.
type arena struct{ b []byte }

func (a *arena) keep(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	if cap(a.b)-len(a.b) < len(raw) {
		a.b = make([]byte, 0, max(len(raw), 4<<10))
	}
	start := len(a.b)
	a.b = append(a.b, raw...)
	return a.b[start:len(a.b):len(a.b)]
}

// keepString returns a copy of s stored in the arena.
func (a *arena) keepString(s string) string {
	// str copies the bytes it is given; the view of s is only read.
	return a.str(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// str returns a string with the bytes of raw, stored in the arena.
func (a *arena) str(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	k := a.keep(raw)
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// pushItem reads one push item object, reusing the previous item's queue
// and partition strings when they repeat.
func (r reader) pushItem(it *pushItemWire, lastQueue, lastPartition *string) error {
	return r.Object(func(k []byte) error {
		switch string(k) {
		case "queue":
			return r.same(&it.Queue, lastQueue)
		case "partition":
			return r.optStr(&it.Partition, lastPartition)
		case "payload":
			return r.raw(&it.Payload)
		case "data":
			return r.raw(&it.Data)
		case "transactionId":
			return r.str(&it.TransactionID)
		case "traceId":
			return r.str(&it.TraceID)
		default:
			return r.skipUnknown(k, pushKeys...)
		}
	})
}

// errRepeated gives up on an array given twice in one object:
// encoding/json decodes the second into the first one's elements, merging
// their fields, which the fast readers do not.
var errRepeated = fmt.Errorf("%w: an array key given twice", errFallBack)

// once makes the second read of an array key give up (see errRepeated).
func once(seen *bool) error {
	if *seen {
		return errRepeated
	}
	*seen = true
	return nil
}

// pushItems reads an array of push items into *dst, a pointer field: null
// sets it to nil, [] to an empty list; sizeHint is the capacity to start
// with.
func (r reader) pushItems(dst **[]pushItemWire, sizeHint int, lastQueue, lastPartition *string) error {
	list := make([]pushItemWire, 0, sizeHint)
	isArr, err := r.Array(func() error {
		list = append(list, pushItemWire{})
		return r.pushItem(&list[len(list)-1], lastQueue, lastPartition)
	})
	switch {
	case err != nil:
		return err
	case !isArr:
		*dst = nil
	default:
		*dst = &list
	}
	return nil
}

// scanPush decodes {"items":[…]}; ok=false means "use encoding/json".
func scanPush(b []byte) (items *[]pushItemWire, ok bool) {
	r := newReader(b)
	var lastQueue, lastPartition string
	seen := false
	err := r.Object(func(k []byte) error {
		if string(k) != "items" {
			return r.skipUnknown(k, "items")
		}
		if err := once(&seen); err != nil {
			return err
		}
		return r.pushItems(&items, min(8192, len(b)/80+4), &lastQueue, &lastPartition)
	})
	if err != nil || r.End() != nil {
		return nil, false
	}
	return items, true
}

// txnWire is the decoded body of POST /api/v1/transaction.
type txnWire struct {
	Operations     *[]txnOpWire `json:"operations"`
	RequiredLeases []string     `json:"requiredLeases"`
	KV             rawJSON      `json:"kv"`
	Timers         rawJSON      `json:"timers"`
}

// scanTxn decodes a transaction body; ok=false means "use encoding/json".
func scanTxn(b []byte, out *txnWire) bool {
	r := newReader(b)
	var lastType, lastPart, lastLease, lastGroup, lastStatus, lastQueue, lastPartition string
	readOp := func(op *txnOpWire) error {
		seenItems := false
		return r.Object(func(k []byte) error {
			switch string(k) {
			case "type":
				return r.same(&op.Type, &lastType)
			case "items":
				if err := once(&seenItems); err != nil {
					return err
				}
				return r.pushItems(&op.Items, min(4096, (len(b)-r.Offset())/100+4), &lastQueue, &lastPartition)
			case "queue":
				return r.str(&op.Queue)
			case "partition":
				return r.optStr(&op.Partition, nil)
			case "payload":
				return r.raw(&op.Payload)
			case "data":
				return r.raw(&op.Data)
			case "transactionId":
				return r.str(&op.TransactionID)
			case "traceId":
				return r.str(&op.TraceID)
			case "partitionId":
				return r.same(&op.PartitionID, &lastPart)
			case "leaseId":
				return r.same(&op.LeaseID, &lastLease)
			case "consumerGroup":
				return r.same(&op.ConsumerGroup, &lastGroup)
			case "status":
				return r.optStr(&op.Status, &lastStatus)
			case "error":
				return r.str(&op.Error)
			default:
				return r.skipUnknown(k, txnOpKeys...)
			}
		})
	}
	seenOps, seenLeases := false, false
	err := r.Object(func(k []byte) error {
		switch string(k) {
		case "operations":
			if err := once(&seenOps); err != nil {
				return err
			}
			ops := make([]txnOpWire, 0, min(4096, len(b)/160+4))
			isArr, err := r.Array(func() error {
				ops = append(ops, txnOpWire{})
				return readOp(&ops[len(ops)-1])
			})
			switch {
			case err != nil:
				return err
			case !isArr:
				out.Operations = nil
			default:
				out.Operations = &ops
			}
			return nil
		case "requiredLeases":
			// [] is empty but not nil, null is nil; a null element is "".
			if err := once(&seenLeases); err != nil {
				return err
			}
			var leases []string
			isArr, err := r.Array(func() error {
				var v string
				err := r.str(&v)
				leases = append(leases, v)
				return err
			})
			if isArr && leases == nil {
				leases = []string{}
			}
			out.RequiredLeases = leases
			return err
		case "kv":
			return rawCopy(r, &out.KV)
		case "timers":
			return rawCopy(r, &out.Timers)
		default:
			return r.skipUnknown(k, "operations", "requiredLeases", "kv", "timers")
		}
	})
	return err == nil && r.End() == nil
}

// rawCopy reads a value (null included) into a copy of its own.
func rawCopy(r reader, dst *rawJSON) error {
	v, err := r.Raw()
	*dst = append(rawJSON(nil), v...)
	return err
}

var kvOpKeys = []string{"op", "ns", "key", "keys", "prefix", "after", "limit", "keysOnly", "value", "ttlSeconds", "forever", "expect", "required", "delta", "min", "max", "tenant", "tenantId", "_tenant"}

// kvOp reads one kv operation object as encoding/json fills a kvOpWire:
// strings and booleans (null leaves them as they are), raw values (null
// kept as the literal) and the keys array. The op, namespace and tenant
// fields repeat across the ops of one body, so they are kept once.
func (r reader) kvOp(op *kvOpWire, lastOp, lastNS *string) error {
	seenKeys := false
	return r.Object(func(k []byte) error {
		switch string(k) {
		case "op":
			return r.same(&op.Op, lastOp)
		case "ns":
			return r.same(&op.NS, lastNS)
		case "key":
			return r.str(&op.Key)
		case "keys":
			if err := once(&seenKeys); err != nil {
				return err
			}
			if r.Null() {
				op.Keys = nil
				return nil
			}
			keys := []string{}
			_, err := r.Array(func() error {
				var v string
				err := r.str(&v)
				keys = append(keys, v)
				return err
			})
			op.Keys = keys
			return err
		case "prefix":
			return r.str(&op.Prefix)
		case "after":
			return r.str(&op.After)
		case "limit":
			return r.raw(&op.Limit)
		case "keysOnly":
			return r.Bool(&op.KeysOnly)
		case "value":
			return r.raw(&op.Value)
		case "ttlSeconds":
			return r.raw(&op.TTL)
		case "forever":
			return r.raw(&op.Forever)
		case "expect":
			return r.raw(&op.Expect)
		case "required":
			return r.Bool(&op.Required)
		case "delta":
			return r.raw(&op.Delta)
		case "min":
			return r.raw(&op.Min)
		case "max":
			return r.raw(&op.Max)
		case "tenant":
			return r.raw(&op.Tenant)
		case "tenantId":
			return r.raw(&op.TenantID)
		case "_tenant":
			return r.raw(&op.TenantU)
		default:
			return r.skipUnknown(k, kvOpKeys...)
		}
	})
}

// kvOps reads an array of kv operations into *dst; null reads as no
// array (isArr false), and an element that is not an object gives up.
func (r reader) kvOps(dst *[]kvOpWire, sizeHint int) (isArr bool, err error) {
	var lastOp, lastNS string
	ops := make([]kvOpWire, 0, sizeHint)
	isArr, err = r.Array(func() error {
		if r.Peek() != '{' {
			return errFallBack
		}
		ops = append(ops, kvOpWire{})
		return r.kvOp(&ops[len(ops)-1], &lastOp, &lastNS)
	})
	*dst = ops
	return isArr, err
}

// kvSizeHint is the capacity to start a body's kv operations with.
func kvSizeHint(b []byte) int { return min(64, len(b)/64+1) }

// scanKVOps decodes a JSON array of kv operations (a transaction's kv
// riders, the kv batch route's bare array); ok=false means "use
// encoding/json", which then answers whatever the fast reader did not
// expect (null, an element that is not an object, a value of the wrong
// type) with its own words. Every string and raw value is a copy: the
// caller may reuse b.
func scanKVOps(b []byte) (ops []kvOpWire, ok bool) {
	r := newReader(b)
	if r.Peek() != '[' {
		return nil, false
	}
	if _, err := r.kvOps(&ops, kvSizeHint(b)); err != nil || r.End() != nil {
		return nil, false
	}
	return ops, true
}

// scanKVBody decodes the kv batch route's {"operations":[…]}: ops is nil
// when the body has no operations array (absent or null), as
// encoding/json leaves the pointer field; ok=false means "use
// encoding/json". Every string and raw value is a copy.
func scanKVBody(b []byte) (ops *[]kvOpWire, ok bool) {
	r := newReader(b)
	if r.Peek() != '{' {
		return nil, false
	}
	seen := false
	err := r.Object(func(k []byte) error {
		if string(k) != "operations" {
			return r.skipUnknown(k, "operations")
		}
		if err := once(&seen); err != nil {
			return err
		}
		var list []kvOpWire
		isArr, err := r.kvOps(&list, kvSizeHint(b))
		switch {
		case err != nil:
			return err
		case !isArr:
			ops = nil
		default:
			ops = &list
		}
		return nil
	})
	if err != nil || r.End() != nil {
		return nil, false
	}
	return ops, true
}
