package queen

import (
	"strings"
	"sync/atomic"
)

// Calls counts the requests a Client sent, by route family: what gate-bench
// and the relay's /metrics report as broker calls, counted where they are
// made rather than by a proxy in the path.
type Calls struct {
	// Pop, Push, Txn and KV are the data-plane routes; KVIncr counts the KV
	// calls carrying at least one incr (admission, refunds, backfills);
	// Lease counts lease renewals; Other is every other route.
	Pop, Push, Txn, KV, KVIncr, Lease, Other int64
}

// Total is every call counted.
func (c Calls) Total() int64 { return c.Pop + c.Push + c.Txn + c.KV + c.Lease + c.Other }

// Sub is c − o field by field.
func (c Calls) Sub(o Calls) Calls {
	return Calls{c.Pop - o.Pop, c.Push - o.Push, c.Txn - o.Txn, c.KV - o.KV, c.KVIncr - o.KVIncr, c.Lease - o.Lease, c.Other - o.Other}
}

// Add is c + o field by field (two clients of one process).
func (c Calls) Add(o Calls) Calls {
	return Calls{c.Pop + o.Pop, c.Push + o.Push, c.Txn + o.Txn, c.KV + o.KV, c.KVIncr + o.KVIncr, c.Lease + o.Lease, c.Other + o.Other}
}

type callCounts struct{ pop, push, txn, kv, kvIncr, lease, other atomic.Int64 }

func (c *callCounts) count(path string) {
	switch {
	case strings.HasPrefix(path, "/api/v1/pop"):
		c.pop.Add(1)
	case path == "/api/v1/transaction":
		c.txn.Add(1)
	case strings.HasPrefix(path, "/api/v1/kv"):
		c.kv.Add(1)
	case path == "/api/v1/push":
		c.push.Add(1)
	case strings.HasPrefix(path, "/api/v1/lease/"):
		c.lease.Add(1)
	default:
		c.other.Add(1)
	}
}

// Calls is what this client has sent so far (answered or not).
func (c *Client) Calls() Calls {
	n := &c.calls
	return Calls{n.pop.Load(), n.push.Load(), n.txn.Load(), n.kv.Load(), n.kvIncr.Load(), n.lease.Load(), n.other.Load()}
}
