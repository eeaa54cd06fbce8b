package budget

import (
	"context"
	"errors"
	"fmt"

	"github.com/queen-mq/gate/libs/queen"
)

// Riders: the charge carried inside the settle transaction (queen-wire §7).
// One required incr per counter the charged items touch (max = the path's
// ceiling, TTL = the sub-window) and one getMany of the same keys, which the
// broker runs after the incrs, so a commit reports each window's end. A
// commit means charged and forwarded together; a lost gate applied nothing,
// so a refusal is never refunded.

// Transactor is the one call the rider path makes; *queen.Client
// implements it.
type Transactor interface {
	Transact(ctx context.Context, t *queen.Transaction) (queen.TxnResult, error)
}

// MaxRiderCounters is the most counters one settle may charge as riders:
// a transaction carries at most 64 kv ops (one is the getMany) and 256 keys
// (each counter's key is counted by its incr and by the getMany).
const MaxRiderCounters = 63

// ErrRidersIgnored is wrapped when a committed transaction did not answer an
// applied slot with a value for every rider: the broker does not apply
// riders, and what the commit forwarded was not charged by it.
var ErrRidersIgnored = errors.New("budget: the broker committed without applying the kv riders")

// Riders appends to t the charge of items [0, n) of b: one required incr
// per touched counter and a getMany of their keys. It returns the pending
// charge (read it back with Committed or Refused) and false, appending
// nothing, when the charge touches no counter or more counters than one
// transaction may carry (charge those with Charge).
func (l *Limiter) Riders(t *queen.Transaction, b *Batch, n int) (*Charge, bool) {
	n = min(max(n, 0), len(b.Items))
	c := newCharge(b, n)
	keys := make([]string, 0, len(b.Counters))
	for i, d := range c.Delta {
		if d > 0 {
			c.riders = append(c.riders, i)
			keys = append(keys, b.Counters[i].Key)
		}
	}
	if len(c.riders) == 0 || len(c.riders) > MaxRiderCounters {
		return nil, false
	}
	c.base = t.Slots()
	for _, i := range c.riders {
		ct := &b.Counters[i]
		t.AddKV(queen.KVIncr(l.NS, ct.Key, c.Delta[i], queen.IncrOpts{TTLSeconds: max(ct.TTLSeconds, 1), Max: queen.Int(ct.Max), Required: true}))
	}
	t.AddKV(queen.KVGetMany(l.NS, keys...))
	return c, true
}

// newCharge is the pending charge of items [0, n) of b. Its per-counter
// slices share two backing arrays (one of int64s, one of bools), each
// capped at its own length: a settle per claim makes one charge, and a
// trickle load makes a claim per item.
func newCharge(b *Batch, n int) *Charge {
	k := len(b.Counters)
	ints := make([]int64, 2*k)
	flags := make([]bool, 2*k)
	delta := ints[:k:k]
	b.addDeltas(delta, 0, min(max(n, 0), len(b.Items)))
	return &Charge{N: n, Delta: delta, Applied: flags[:k:k], Post: ints[k:], PostKnown: flags[k:], State: make([]State, k)}
}

// Committed reads the rider slots of a committed settle into c and tells
// the Observer. Every rider must answer an applied incr with a value; any
// other answer is ErrRidersIgnored (c then says nothing was applied).
func (l *Limiter) Committed(b *Batch, c *Charge, res *queen.TxnResult) error {
	if err := l.committed(b, c, res); err != nil {
		clear(c.Applied)
		clear(c.PostKnown)
		return err
	}
	if l.Observer != nil {
		for _, i := range c.riders {
			l.Observer(b.Counters[i].Key, c.Delta[i], c.Post[i], c.State[i].ExpiresAt)
		}
	}
	return nil
}

func (l *Limiter) committed(b *Batch, c *Charge, res *queen.TxnResult) error {
	want := c.base + len(c.riders) + 1
	if len(res.Results) != want {
		return fmt.Errorf("%w: %d result slots, want %d", ErrRidersIgnored, len(res.Results), want)
	}
	for j, i := range c.riders {
		r := res.Results[c.base+j].KV
		if r == nil || r.Op != queen.OpIncr || !r.Applied {
			return fmt.Errorf("%w: slot %d is %+v, want an applied incr", ErrRidersIgnored, c.base+j, res.Results[c.base+j])
		}
		v, err := r.Int64()
		if err == nil && (len(r.Value) == 0 || string(r.Value) == "null") {
			err = errors.New("the value is absent")
		}
		if err != nil {
			return fmt.Errorf("%w: slot %d carries no counter value: %w", ErrRidersIgnored, c.base+j, err)
		}
		c.Applied[i], c.Post[i], c.PostKnown[i] = true, v, true
		c.State[i] = State{Value: v, Known: true}
	}
	if read := res.Results[want-1].KV; read != nil {
		c.readRows(b, read.Rows)
	}
	return nil
}

// readRows records the values and window ends a getMany read.
func (c *Charge) readRows(b *Batch, rows []queen.KVRow) {
	for _, row := range rows {
		i, ok := b.index[row.Key]
		if !ok {
			continue
		}
		v, err := row.Int64()
		if err != nil {
			continue
		}
		exp, _ := row.ExpiresAt.Time()
		c.State[i] = State{Value: v, ExpiresAt: exp, Known: true}
	}
}

// Refused reads a lost rider gate into c: nothing applied, and the refused
// counter's current value is known. It reports false when the refusal is not
// a rider's limit (the caller handles it as any other rollback).
func (l *Limiter) Refused(b *Batch, c *Charge, r *queen.Refusal) bool {
	if r == nil || r.KVReason != queen.KVLimit {
		return false
	}
	j := r.FailedIndex - c.base
	if j < 0 || j >= len(c.riders) {
		return false
	}
	i := c.riders[j]
	c.lost = make([]bool, len(c.Delta))
	c.lost[i] = true
	if v, err := r.Int64(); err == nil {
		c.State[i] = State{Value: v, Known: true}
	}
	return true
}

// Decided reports whether Prefix and Wait can be computed from what c
// knows: every counter the charge sent has a known value, and, when nothing
// fits, every refused counter has a known window end. A rider refusal names
// one counter's value and no window end, so a charge of several counters,
// or one that fits nothing, needs one Read first.
func (c *Charge) Decided(b *Batch) bool {
	for i, d := range c.Delta {
		if d > 0 && !c.State[i].Known {
			return false
		}
	}
	if Prefix(b, c) > 0 {
		return true
	}
	for _, i := range c.Refused() {
		if c.State[i].ExpiresAt.IsZero() && c.State[i].Value > 0 {
			return false
		}
	}
	return true
}

// Read fills c's state with one getMany of every counter the charge sent:
// values and window ends (a missing key reads 0, a fresh window).
func (l *Limiter) Read(ctx context.Context, b *Batch, c *Charge) error {
	var keys []string
	for i, d := range c.Delta {
		if d > 0 {
			keys = append(keys, b.Counters[i].Key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	for start := 0; start < len(keys); start += maxReadKeys {
		chunk := keys[start:min(start+maxReadKeys, len(keys))]
		res, err := l.KV.KV(ctx, queen.KVGetMany(l.NS, chunk...))
		if err != nil {
			return fmt.Errorf("%w: reading %d counters: %w", ErrCall, len(chunk), err)
		}
		if res.Refusal != nil || len(res.Results) != 1 {
			return fmt.Errorf("%w: reading %d counters: unexpected answer", ErrCall, len(chunk))
		}
		for _, k := range res.Results[0].Missing {
			if i, ok := b.index[k]; ok {
				c.State[i] = State{Known: true}
			}
		}
		c.readRows(b, res.Results[0].Rows)
	}
	if c.lost != nil {
		for i, d := range c.Delta {
			if d > 0 && c.State[i].Known && c.State[i].Value+d > b.Counters[i].Max {
				c.lost[i] = true
			}
		}
	}
	return nil
}

// maxReadKeys is the most keys one getMany of Read carries (the kv route's
// 1024-key budget).
const maxReadKeys = 1024

// Backfill charges what a commit forwarded when the broker did not apply
// its riders: the same deltas, without a ceiling, so the counter says what
// was forwarded (an over-ceiling window is then visible, never hidden).
func (l *Limiter) Backfill(ctx context.Context, b *Batch, c *Charge) error {
	ops := make([]queen.KVOp, 0, len(c.riders))
	for _, i := range c.riders {
		ct := &b.Counters[i]
		ops = append(ops, queen.KVIncr(l.NS, ct.Key, c.Delta[i], queen.IncrOpts{TTLSeconds: max(ct.TTLSeconds, 1)}))
	}
	for start := 0; start < len(ops); start += MaxKeysPerCall {
		chunk := ops[start:min(start+MaxKeysPerCall, len(ops))]
		res, err := l.KV.KV(ctx, chunk...)
		if err != nil {
			return fmt.Errorf("%w: backfilling %d counters: %w", ErrCall, len(chunk), err)
		}
		if res.Refusal != nil || len(res.Results) != len(chunk) {
			return fmt.Errorf("%w: backfilling %d counters: unexpected answer", ErrCall, len(chunk))
		}
		for j, r := range res.Results {
			if r.Applied && l.Observer != nil {
				v, _ := r.Int64()
				l.Observer(chunk[j].Key, chunk[j].Delta, v, c.State[c.riders[start+j]].ExpiresAt)
			}
		}
	}
	return nil
}

// ProbeRiders proves that the broker applies transaction riders: a
// riders-only transaction increments key (TTL 1 s) and must answer an
// applied slot with a value. Any other answer is an error saying why.
func (l *Limiter) ProbeRiders(ctx context.Context, tx Transactor, key string) error {
	t := (&queen.Transaction{}).AddKV(queen.KVIncr(l.NS, key, 1, queen.IncrOpts{TTLSeconds: 1, Required: true}))
	res, err := tx.Transact(ctx, t)
	if err != nil {
		return fmt.Errorf("the rider probe failed: %w", err)
	}
	if !res.Success {
		return fmt.Errorf("the rider probe was rolled back: %v", res.Refusal)
	}
	if len(res.Results) != 1 || res.Results[0].KV == nil || !res.Results[0].KV.Applied {
		return fmt.Errorf("%w: the probe answered %+v", ErrRidersIgnored, res.Results)
	}
	if v, err := res.Results[0].KV.Int64(); err != nil || v < 1 || len(res.Results[0].KV.Value) == 0 {
		return fmt.Errorf("%w: the probe's slot carries value %s", ErrRidersIgnored, res.Results[0].KV.Value)
	}
	return nil
}
