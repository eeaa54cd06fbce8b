package queen

import (
	"reflect"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// The hot-path answers (a claim of up to 200 messages, a committed
// transaction's flat results, a KV batch) are decoded with the one JSON
// scanner (internal/jsonkit) rather than by encoding/json's reflection,
// which cost several microseconds per relayed item. It mirrors
// encoding/json's semantics for the types it fills (null leaves a field
// zero, an empty array is a non-nil empty slice, a RawMessage keeps the
// value's bytes, invalid UTF-8 in a string becomes U+FFFD, an integer field
// refuses fractions) and rejects invalid JSON; the tests compare these
// decoders with encoding/json.

// strAs reads a string into a field of a named string type (a Timestamp,
// a KVReason…); null leaves it unchanged.
func strAs[T ~string](s *jsonkit.Scanner, dst *T) error {
	v := string(*dst)
	err := s.Str(&v)
	*dst = T(v)
	return err
}

// rawCopy reads the next value's bytes into a copy of their own: the
// answers other than a claim are the caller's buffer, which is reused.
func rawCopy(s *jsonkit.Scanner) ([]byte, error) {
	v, err := s.Raw()
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), v...), nil
}

// ---- claim ----

// decodeClaimFast decodes a pop answer body into w. The scanner reads a
// private copy of the body, so the messages' payloads are sub-slices of
// that one copy.
func decodeClaimFast(body []byte, w *popWire) error {
	s := jsonkit.NewScanner(append([]byte(nil), body...))
	var shared struct{ partitionID, partition, leaseID, group, createdAt string }
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "queue":
			return s.Str(&w.Queue)
		case "partition":
			return s.Str(&w.Partition)
		case "partitionId":
			return s.Str(&w.PartitionID)
		case "leaseId":
			return s.Str(&w.LeaseID)
		case "consumerGroup":
			return s.Str(&w.ConsumerGroup)
		case "partitionsClaimed":
			return s.Int(&w.PartitionsClaimed)
		case "paused":
			return s.Bool(&w.Paused)
		case "success":
			return s.OptBool(&w.Success)
		case "error":
			v, err := s.Raw()
			w.Error = v
			return err
		case "messages":
			msgs := w.Messages[:0]
			isArr, err := s.Array(func() error {
				if len(msgs) < cap(msgs) {
					msgs = msgs[:len(msgs)+1]
					msgs[len(msgs)-1] = Message{}
				} else {
					msgs = append(msgs, Message{})
				}
				m := &msgs[len(msgs)-1]
				return s.Object(func(k []byte) error {
					switch string(k) {
					case "id":
						return s.Str(&m.ID)
					case "transactionId":
						return s.Str(&m.TransactionID)
					case "traceId":
						return s.Str(&m.TraceID)
					case "data":
						v, err := s.Raw()
						m.Data = v
						return err
					case "producerSub":
						return s.Str(&m.ProducerSub)
					case "createdAt":
						str := string(m.CreatedAt)
						err := s.StrShared(&str, &shared.createdAt)
						m.CreatedAt = Timestamp(str)
						return err
					case "partitionId":
						return s.StrShared(&m.PartitionID, &shared.partitionID)
					case "partition":
						return s.StrShared(&m.Partition, &shared.partition)
					case "leaseId":
						return s.StrShared(&m.LeaseID, &shared.leaseID)
					case "consumerGroup":
						return s.StrShared(&m.ConsumerGroup, &shared.group)
					case "retryCount":
						return s.Int(&m.RetryCount)
					default:
						return s.Skip()
					}
				})
			})
			if err != nil || !isArr {
				return err
			}
			if msgs == nil {
				msgs = []Message{}
			}
			w.Messages = msgs
			return nil
		default:
			return s.Skip()
		}
	})
	if err != nil {
		return err
	}
	return s.End()
}

// ---- results: kv and transaction ----

// kvResult decodes one key of a KV result object into r; false when the
// key is not a KV result's.
func kvResult(s *jsonkit.Scanner, r *KVResult, key []byte) (bool, error) {
	switch string(key) {
	case "index":
		return true, s.Int(&r.Index)
	case "op":
		return true, strAs(s, &r.Op)
	case "key":
		return true, s.Str(&r.Key)
	case "applied":
		return true, s.Bool(&r.Applied)
	case "found":
		return true, s.Bool(&r.Found)
	case "reason":
		return true, strAs(s, &r.Reason)
	case "value":
		v, err := rawCopy(s)
		r.Value = v
		return true, err
	case "version":
		return true, s.Int64(&r.Version)
	case "expiresAt":
		return true, strAs(s, &r.ExpiresAt)
	case "updatedAt":
		return true, strAs(s, &r.UpdatedAt)
	case "rows":
		rows := r.Rows[:0]
		isArr, err := s.Array(func() error {
			rows = append(rows, KVRow{})
			row := &rows[len(rows)-1]
			return s.Object(func(k []byte) error {
				switch string(k) {
				case "key":
					return s.Str(&row.Key)
				case "value":
					v, err := rawCopy(s)
					row.Value = v
					return err
				case "version":
					return s.Int64(&row.Version)
				case "expiresAt":
					return strAs(s, &row.ExpiresAt)
				case "updatedAt":
					return strAs(s, &row.UpdatedAt)
				default:
					return s.Skip()
				}
			})
		})
		if err != nil || !isArr {
			return true, err
		}
		if rows == nil {
			rows = []KVRow{}
		}
		r.Rows = rows
		return true, nil
	case "missing":
		return true, s.Strings(&r.Missing)
	case "truncated":
		return true, s.Bool(&r.Truncated)
	case "nextAfter":
		return true, s.Str(&r.NextAfter)
	}
	return false, nil
}

// refusalField decodes one key of the refusal envelope into w; false when
// the key is not the envelope's.
func refusalField(s *jsonkit.Scanner, w *refusalWire, key []byte) (bool, error) {
	switch string(key) {
	case "ok":
		return true, s.OptBool(&w.OK)
	case "success":
		return true, s.OptBool(&w.Success)
	case "reason":
		return true, s.Str(&w.Reason)
	case "error":
		v, err := rawCopy(s)
		w.Error = v
		return true, err
	case "failedIndex":
		return true, s.OptInt(&w.FailedIndex)
	case "kvReason":
		return true, s.Str(&w.KVReason)
	case "version":
		return true, s.Int64(&w.Version)
	case "value":
		v, err := rawCopy(s)
		w.Value = v
		return true, err
	}
	return false, nil
}

// decodeResults is the one decoder of the answers shaped as results plus
// a refusal envelope (a KV batch, a transaction): the "results" array goes
// to *results, one element read by elem each (its slot starts zero, the
// slice's backing array is reused); top, when not nil, reads the answer's
// own other keys (false for a key it does not know); the envelope's keys go
// to w and any other key is checked and skipped.
func decodeResults[T any](body []byte, results *[]T, w *refusalWire, top func(s *jsonkit.Scanner, key []byte) (bool, error), elem func(s *jsonkit.Scanner, r *T) error) error {
	s := jsonkit.NewScanner(body)
	err := s.Object(func(key []byte) error {
		if string(key) == "results" {
			res := (*results)[:0]
			isArr, err := s.Array(func() error {
				var zero T
				res = append(res, zero)
				return elem(s, &res[len(res)-1])
			})
			if err != nil || !isArr {
				return err
			}
			if res == nil {
				res = []T{}
			}
			*results = res
			return nil
		}
		if top != nil {
			if ok, err := top(s, key); ok {
				return err
			}
		}
		if ok, err := refusalField(s, w, key); ok {
			return err
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	return s.End()
}

// decodeKVFast decodes a KV batch answer into w.
func decodeKVFast(body []byte, w *kvWire) error {
	return decodeResults(body, &w.Results, &w.refusalWire, nil, func(s *jsonkit.Scanner, r *KVResult) error {
		return s.Object(func(k []byte) error {
			if ok, err := kvResult(s, r, k); ok {
				return err
			}
			return s.Skip()
		})
	})
}

// decodeTxnFast decodes a transaction answer into w; lean checks but does
// not keep the strings the relay's settle never reads.
func decodeTxnFast(body []byte, w *txnWire, lean bool) error {
	var queueName string
	var kv KVResult // scratch for one slot; copied out only for KV riders
	top := func(s *jsonkit.Scanner, key []byte) (bool, error) {
		if string(key) == "transactionId" {
			return true, s.Str(&w.TransactionID)
		}
		return false, nil
	}
	return decodeResults(body, &w.Results, &w.refusalWire, top, func(s *jsonkit.Scanner, r *TxnItemResult) error {
		kv = KVResult{}
		hasKV := false
		err := s.Object(func(k []byte) error {
			switch string(k) {
			case "index":
				return s.Int(&r.Index)
			case "type":
				return s.Str(&r.Type)
			case "opIndex":
				return s.Int(&r.OpIndex)
			case "success":
				return s.Bool(&r.Success)
			case "transactionId":
				if lean {
					return s.SkipStr()
				}
				return s.Str(&r.TransactionID)
			case "messageId":
				if lean {
					return s.SkipStr()
				}
				return s.Str(&r.MessageID)
			case "queueName":
				if lean {
					return s.SkipStr()
				}
				return s.StrShared(&r.QueueName, &queueName)
			case "duplicate":
				return s.Bool(&r.Duplicate)
			case "error":
				return s.Str(&r.Error)
			case "dlq":
				return s.Bool(&r.DLQ)
			case "ok":
				return s.Bool(&r.OK)
			case "status":
				return s.Str(&r.Status)
			}
			if ok, err := kvResult(s, &kv, k); ok {
				hasKV = true
				return err
			}
			return s.Skip()
		})
		if err != nil {
			return err
		}
		if r.Type == "kv" || hasKV && !reflect.ValueOf(kv).IsZero() {
			rider := kv
			rider.Index = r.OpIndex
			r.KV = &rider
		}
		return nil
	})
}
