package queen

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// The hot-path request bodies (push items, acks, transactions, KV batches)
// are written by hand with the appenders below instead of going through
// reflection: the relay sends one of each per claim of up to 200 messages.
// Strings are written by the one JSON string encoder (jsonkit.AppendString),
// byte for byte encoding/json's without HTML escaping.

// field appends `,"name":` (or `"name":` right after an opening brace).
func field(b []byte, name string) []byte {
	if n := len(b); n > 0 && b[n-1] != '{' && b[n-1] != '[' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func strField(b []byte, name, v string) []byte { return jsonkit.AppendString(field(b, name), v) }

func strFieldOmit(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return strField(b, name, v)
}

func intField(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(field(b, name), v, 10)
}

func boolField(b []byte, name string, v bool) []byte {
	return strconv.AppendBool(field(b, name), v)
}

// rawField appends a caller's JSON value verbatim after checking that it is
// one valid JSON value; nil appends null.
func rawField(b []byte, name string, v json.RawMessage, what string) ([]byte, error) {
	b = field(b, name)
	if v == nil {
		return append(b, "null"...), nil
	}
	if !json.Valid(v) {
		return b, fmt.Errorf("%s is not valid JSON (%.40q); pass one JSON value, e.g. {\"op\":\"x\"} or null", what, v)
	}
	return append(b, v...), nil
}

// appendPushItem appends one push item object.
func appendPushItem(b []byte, it *PushItem, where string) ([]byte, error) {
	if it.Queue == "" {
		return b, fmt.Errorf("%s: queue is empty; name the queue to push to", where)
	}
	b = append(b, '{')
	b = strField(b, "queue", it.Queue)
	b = strFieldOmit(b, "partition", it.Partition)
	if it.PayloadValid && it.Payload != nil {
		b = append(field(b, "payload"), it.Payload...)
	} else {
		var err error
		if b, err = rawField(b, "payload", it.Payload, where+": payload"); err != nil {
			return b, err
		}
	}
	b = strFieldOmit(b, "transactionId", it.TransactionID)
	b = strFieldOmit(b, "traceId", it.TraceID)
	return append(b, '}'), nil
}

// appendAckFields appends the fields of one ack (without braces); the
// consumer group is written only when withGroup is set (the batch route
// carries one group for all items).
func appendAckFields(b []byte, a *AckItem, withGroup bool) []byte {
	b = strField(b, "transactionId", a.TransactionID)
	b = strField(b, "partitionId", a.PartitionID)
	b = strFieldOmit(b, "leaseId", a.LeaseID)
	if withGroup {
		b = strFieldOmit(b, "consumerGroup", a.ConsumerGroup)
	}
	st := a.Status
	if st == "" {
		st = AckCompleted
	}
	b = strField(b, "status", string(st))
	return strFieldOmit(b, "error", a.Error)
}

// appendStrings appends ss as a JSON array of strings ([] when empty).
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonkit.AppendString(b, s)
	}
	return append(b, ']')
}

// appendKVOp appends one KV op object.
func appendKVOp(b []byte, op *KVOp, where string) ([]byte, error) {
	if op.Op == "" {
		return b, fmt.Errorf("%s: op is empty; build ops with KVGet, KVGetMany, KVGetPrefix, KVPut, KVPutIfAbsent, KVIncr or KVDelete", where)
	}
	b = append(b, '{')
	b = strField(b, "op", string(op.Op))
	b = strField(b, "ns", op.NS)
	switch op.Op {
	case OpGetMany:
		b = field(b, "keys")
		b = appendStrings(b, op.Keys)
	case OpGetPrefix:
		b = strField(b, "prefix", op.Prefix)
		b = strFieldOmit(b, "after", op.After)
		if op.Limit > 0 {
			b = intField(b, "limit", int64(op.Limit))
		}
		if op.KeysOnly {
			b = boolField(b, "keysOnly", true)
		}
	default:
		b = strField(b, "key", op.Key)
	}
	if op.Op == OpPut || op.Op == OpPutIfAbsent || op.Value != nil {
		v := op.Value
		if v == nil {
			v = jsonNull
		}
		var err error
		if b, err = rawField(b, "value", v, where+": value"); err != nil {
			return b, err
		}
	}
	if op.Op == OpIncr {
		b = intField(b, "delta", op.Delta)
	}
	if op.TTLSeconds != 0 {
		b = intField(b, "ttlSeconds", op.TTLSeconds)
	}
	if op.Forever {
		b = boolField(b, "forever", true)
	}
	if op.Min.Set {
		b = intField(b, "min", op.Min.Value)
	}
	if op.Max.Set {
		b = intField(b, "max", op.Max.Value)
	}
	if op.Expect.Set {
		b = intField(b, "expect", op.Expect.Value)
	}
	if op.Required {
		b = boolField(b, "required", true)
	}
	return append(b, '}'), nil
}

var jsonNull = json.RawMessage("null")
