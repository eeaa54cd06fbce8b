// Package handover is the kv mailbox between gate-relay and gate-recorder.
// A relay keeps its observations in memory (per-second Watch samples per
// node and path, per-stage minute counts, the denial ring) and writes them,
// every flush period, as replacement rows under `hist:{recorder}:…` in
// GATE_KV_NAMESPACE with a TTL, so an absent recorder cannot fill kv.
// gate-recorder reads every row, commits them to PostgreSQL (libs/history,
// idempotently) and deletes each row at the version it read, so a row the
// relay rewrote meanwhile stays for the next pass. The relay learns that a
// row was committed when it is gone before its TTL, and only then forgets
// what it held: a database outage leaves everything in the relay's bounded
// buffers.
//
// A recorder id is 32 lowercase hex characters minted per relay replica ×
// graph runtime × node. This package has no PostgreSQL dependency (the
// relay imports it).
package handover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/libs/queen"
)

// Prefix starts every handover key.
const Prefix = "hist:"

// Row kinds.
const (
	KindWatch   = "watch"
	KindSamples = "samples"
	KindRollup  = "rollup"
	KindTraces  = "traces"
	// KindKeys is one second's items of one path per recorded scope
	// value and op (while a scoped or op-filtered shadow candidate is
	// set), in chunks.
	KindKeys = "keys"
)

// Format is the row format version.
const Format = 1

// MaxOpsPerCall is the broker's per-call op limit.
const MaxOpsPerCall = 255

// Row is one handover row. Every row names its recorder and node; Kind
// says which of the optional parts it carries.
type Row struct {
	V        int    `json:"v"`
	Kind     string `json:"kind"`
	Recorder string `json:"recorder"`
	Replica  string `json:"replica"`
	App      string `json:"app"`
	Graph    string `json:"graph"`
	Node     string `json:"node"`
	// Session is watch.startedAt (samples and watch rows).
	Session int64 `json:"session,omitempty"`
	// Watch is the recorder's state (kind watch).
	Watch *Watch `json:"watch,omitempty"`
	// Path and Samples are one path's complete seconds (kind samples):
	// each [second ms, items, cost].
	Path    string     `json:"path,omitempty"`
	Samples [][3]int64 `json:"samples,omitempty"`
	// Minute and Lanes are the recorder's running totals of one minute
	// per path (kind rollup).
	Minute int64  `json:"minute,omitempty"`
	Lanes  []Lane `json:"lanes,omitempty"`
	// Traces are denials (kind traces).
	Traces []Trace `json:"traces,omitempty"`
	// Keys is one chunk of one second's keyed counts (kind keys, with
	// Session and Path).
	Keys *Keys `json:"keys,omitempty"`
}

// Keys is one chunk of a second's items per recorded scope and op.
type Keys struct {
	// Second is the second's start (ms); Chunk the chunk's number.
	Second int64 `json:"second"`
	Chunk  int   `json:"chunk"`
	// Entries are the counts per scope (a JSON object of the candidate's
	// scopeBy fields, shadow.AppendScope) and op.
	Entries []KeyEntry `json:"entries"`
	// Overflow and OverflowCost are the second's items past the relay's
	// cap on distinct values a second (or with a value no key can hold):
	// counted, not keyed (chunk 0 only).
	Overflow     int64 `json:"overflow,omitempty"`
	OverflowCost int64 `json:"overflowCost,omitempty"`
}

// KeyEntry is the items of one scope and op in a second.
type KeyEntry struct {
	Scope string `json:"scope"`
	Op    string `json:"op,omitempty"`
	Items int64  `json:"items"`
	Cost  int64  `json:"cost"`
}

// Watch is a Watch recorder's state.
type Watch struct {
	// Started is the recorder's creation (ms).
	Started int64 `json:"started"`
	// Until is the watch's end (startedAt + durationSeconds).
	Until int64 `json:"until"`
	// ClosedAt is when the runtime stopped (0 = open).
	ClosedAt int64 `json:"closedAt"`
	// Through is the end of the seconds handed over (ms).
	Through int64 `json:"through"`
	// Lost is how many items the recorder dropped (buffer full).
	Lost int64 `json:"lost"`
}

// Lane is one path's totals for a minute.
type Lane struct {
	Path     string  `json:"path"`
	Admitted int64   `json:"admitted"`
	Denied   int64   `json:"denied"`
	Cost     float64 `json:"cost"`
}

// Trace is one denial.
type Trace struct {
	Seq      uint64 `json:"seq"`
	At       int64  `json:"at"`
	Path     string `json:"path"`
	Op       string `json:"op"`
	Outcome  string `json:"outcome"`
	BudgetID string `json:"budgetId"`
}

// Ref is the trace's identity across replays.
func (t Trace) Ref(recorder string) string { return recorder + ":" + strconv.FormatUint(t.Seq, 10) }

// NewRecorderID mints a recorder id: 128 random bits, 32 hex characters.
func NewRecorderID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WatchKey, SamplesKey, RollupKey and TracesKey name a recorder's rows.
func WatchKey(rec string) string { return Prefix + rec + ":w" }

// SamplesKey is the row of one path's seconds in the minute block starting
// at block (ms); pathIndex is the path's position in the plan.
func SamplesKey(rec string, pathIndex int, block int64) string {
	return fmt.Sprintf("%s%s:s:%d:%d", Prefix, rec, pathIndex, block)
}

// KeysKey is the row of chunk of one path's keyed counts in second (ms).
func KeysKey(rec string, pathIndex int, second int64, chunk int) string {
	return fmt.Sprintf("%s%s:k:%d:%d:%d", Prefix, rec, pathIndex, second, chunk)
}

// RollupKey is the row of one minute.
func RollupKey(rec string, minute int64) string {
	return fmt.Sprintf("%s%s:r:%d", Prefix, rec, minute)
}

// TracesKey is the row of the traces from seq first.
func TracesKey(rec string, first uint64) string {
	return fmt.Sprintf("%s%s:t:%d", Prefix, rec, first)
}

// RecorderOf is the recorder id of a handover key ("" if it is not one).
func RecorderOf(key string) string {
	if !strings.HasPrefix(key, Prefix) {
		return ""
	}
	rest := key[len(Prefix):]
	if i := strings.IndexByte(rest, ':'); i > 0 {
		return rest[:i]
	}
	return ""
}

// Entry is a row as read, with its key and kv version.
type Entry struct {
	Key     string
	Version int64
	Row     Row
	// Err is set when the value did not decode (the row is deleted
	// anyway: nothing can ever read it).
	Err error
}

// Read returns every handover row in ns (paged getPrefix).
func Read(ctx context.Context, c *queen.Client, ns string) ([]Entry, error) {
	var out []Entry
	after := ""
	for {
		res, err := c.KV(ctx, queen.KVGetPrefix(ns, Prefix, queen.PrefixOpts{After: after, Limit: 1000}))
		if err != nil {
			return out, fmt.Errorf("handover: reading %s*: %w", Prefix, err)
		}
		if err := res.Err(); err != nil {
			return out, fmt.Errorf("handover: reading %s*: %w", Prefix, err)
		}
		if len(res.Results) == 0 {
			return out, nil
		}
		r := res.Results[0]
		for _, kr := range r.Rows {
			e := Entry{Key: kr.Key, Version: kr.Version}
			if err := json.Unmarshal(kr.Value, &e.Row); err != nil {
				e.Err = err
			} else if e.Row.V != Format || e.Row.Recorder == "" {
				e.Err = fmt.Errorf("handover row %s has format %d, recorder %q", kr.Key, e.Row.V, e.Row.Recorder)
			}
			out = append(out, e)
		}
		if !r.Truncated || r.NextAfter == "" {
			return out, nil
		}
		after = r.NextAfter
	}
}

// Delete removes rows at the versions they were read at (a row rewritten
// since stays); it returns how many were deleted.
func Delete(ctx context.Context, c *queen.Client, ns string, entries []Entry) (int, error) {
	n := 0
	for i := 0; i < len(entries); i += MaxOpsPerCall {
		chunk := entries[i:min(i+MaxOpsPerCall, len(entries))]
		ops := make([]queen.KVOp, 0, len(chunk))
		for _, e := range chunk {
			ops = append(ops, queen.KVDelete(ns, e.Key, queen.DeleteOpts{Expect: queen.Int(e.Version)}))
		}
		res, err := c.KV(ctx, ops...)
		if err != nil {
			return n, fmt.Errorf("handover: deleting committed rows: %w", err)
		}
		for _, r := range res.Results {
			if r.Applied {
				n++
			}
		}
	}
	return n, nil
}
