package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// PageLimit is the most rows one getPrefix page asks for (the broker's
// clamp); every listing reads page after page until one is not truncated.
const PageLimit = 1000

// revisionKey is the change signal: an integer bumped on every document
// write or delete, so a relay notices a declaration within one short poll.
const revisionKey = "rev:graphs"

// changePrefix starts the change rows: "chg:{revision}" (20 digits, so
// byte order is numeric order) names the graph the write of that revision
// changed, so a relay reads only what changed since the revision it has.
const changePrefix = "chg:"

// ChangeTTL is how long a change row lives: a relay that falls further
// behind re-reads every document (its safety net) instead.
const ChangeTTL = 10 * time.Minute

// changeKey is the key of the change row of revision n.
func changeKey(n int64) string { return fmt.Sprintf("%s%020d", changePrefix, n) }

// Change is one document write or delete: the revision it bumped the
// change signal to, and the graph it changed.
type Change struct {
	Rev   int64  `json:"rev"`
	App   string `json:"application"`
	Graph string `json:"graph"`
}

// noteChange writes the change row of the revision a write's incr
// answered (res.Results[i]). It is a hint: when it is missing (this call
// failed, or the process died before it), a relay sees the revision gap
// and re-reads every document.
func (s *Store) noteChange(ctx context.Context, res queen.KVResponse, i int, app, graph string) {
	if i < 0 || i >= len(res.Results) || !res.Results[i].Applied {
		return
	}
	n, err := res.Results[i].Int64()
	if err != nil || n <= 0 {
		return
	}
	body, _ := json.Marshal(Change{Rev: n, App: app, Graph: graph})
	_, _ = s.c.KV(ctx, queen.KVPut(s.ns, changeKey(n), body, queen.PutOpts{TTLSeconds: int64(ChangeTTL / time.Second)}))
}

// Changes reads the change rows after revision rev (exclusive), oldest
// first, page by page. Revisions a writer bumped without (yet) writing its
// row are absent: the caller sees the gap.
func (s *Store) Changes(ctx context.Context, rev int64) ([]Change, error) {
	var out []Change
	err := s.eachRowAfter(ctx, changePrefix, changeKey(rev), func(row queen.KVRow) {
		var c Change
		if json.Unmarshal(row.Value, &c) != nil || c.Rev <= rev || changeKey(c.Rev) != row.Key || c.App == "" || c.Graph == "" {
			return
		}
		out = append(out, c)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the changes after revision %d: %w", rev, err)
	}
	return out, nil
}

// Store reads and writes Gate's state in one kv namespace. The zero value is
// not usable; build one with New.
type Store struct {
	c  *queen.Client
	ns string
}

// New returns a Store over client in kv namespace ns ("" means
// plan.DefaultKVNamespace, "gate").
func New(c *queen.Client, ns string) *Store {
	if ns == "" {
		ns = plan.DefaultKVNamespace
	}
	return &Store{c: c, ns: ns}
}

// Namespace is the kv namespace this store writes.
func (s *Store) Namespace() string { return s.ns }

// Client is the broker client the store talks through.
func (s *Store) Client() *queen.Client { return s.c }

// Document is one stored declaration.
type Document struct {
	// App and Graph name the declaration.
	App   string `json:"application"`
	Graph string `json:"graph"`
	// Key is the kv key it was read from.
	Key string `json:"key"`
	// Legacy is true for a v1 target stored under "spec:".
	Legacy bool `json:"legacy,omitempty"`
	// Body is the document exactly as stored.
	Body json.RawMessage `json:"body"`
	// Row is the kv row's version token (opaque: compare with == only), the
	// precondition PutIf writes over it with.
	Row int64 `json:"row,omitempty"`
}

// KeysRow is the document's row as a keys-only listing (Rows) names it:
// its key, name, kind and the row's version, without the body.
func (d Document) KeysRow() Row {
	return Row{App: d.App, Graph: d.Graph, Key: d.Key, Legacy: d.Legacy, Version: d.Row}
}

// ETag is the document's entity tag (see ETag).
func (d Document) ETag() string { return ETag(d.Body) }

// ETag is the strong entity tag (RFC 9110 §8.8.3) of a stored document:
// the first 16 bytes of the SHA-256 of the bytes exactly as stored in kv,
// in lower-case hex, quoted ("9f86d081884c7d659a2feaa0c55ad015"). Every
// gate-api process derives the same tag from the same stored bytes, a
// document stored again byte for byte keeps its tag, and any change to
// what is stored (a field, its order, watch.startedAt) changes it.
func ETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// Listing is every stored document. Complete is false when a page was
// truncated or a row was unreadable; a reconcile must not stop a graph on an
// incomplete listing.
type Listing struct {
	Documents []Document
	Complete  bool
}

// Find returns the stored document of app/graph in the listing.
func (l Listing) Find(app, graph string) (Document, bool) {
	var legacy *Document
	for i := range l.Documents {
		d := &l.Documents[i]
		if d.App == app && d.Graph == graph {
			if !d.Legacy {
				return *d, true
			}
			legacy = d
		}
	}
	if legacy != nil {
		return *legacy, true
	}
	return Document{}, false
}

// Put stores body as the document of app/graph, with no expiry, and bumps
// the change signal in the same kv call.
func (s *Store) Put(ctx context.Context, app, graph string, body json.RawMessage) error {
	key := plan.DocumentKey(app, graph)
	res, err := s.c.KV(ctx,
		queen.KVPut(s.ns, key, body, queen.PutOpts{Forever: true}),
		queen.KVIncr(s.ns, revisionKey, 1, queen.IncrOpts{Forever: true}),
	)
	if err != nil {
		return fmt.Errorf("storing %s: %w", key, err)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("storing %s: %w", key, err)
	}
	if len(res.Results) < 1 || !res.Results[0].Applied {
		return fmt.Errorf("storing %s: the broker did not apply the put", key)
	}
	s.noteChange(ctx, res, 1, app, graph)
	return nil
}

// ErrChanged is PutIf's answer when the row is no longer the one the
// caller read: another writer (another gate-api process) stored or deleted
// the document meanwhile.
var ErrChanged = errors.New("the stored document changed since it was read")

// PutIf stores body as the document of app/graph only if its row is still
// the one the caller read: row is that row's version token (Document.Row),
// or 0 for "no document was stored" (a legacy v1 row does not count: its
// key is another). The change signal is bumped in the same call, and both
// or neither apply. A lost precondition is ErrChanged, wrapped.
func (s *Store) PutIf(ctx context.Context, app, graph string, body json.RawMessage, row int64) error {
	key := plan.DocumentKey(app, graph)
	res, err := s.c.KV(ctx,
		queen.KVPut(s.ns, key, body, queen.PutOpts{Forever: true, Expect: queen.Int(row), Required: true}),
		queen.KVIncr(s.ns, revisionKey, 1, queen.IncrOpts{Forever: true}),
	)
	if err != nil {
		return fmt.Errorf("storing %s: %w", key, err)
	}
	if r := res.Refusal; r != nil {
		if r.KVPrecondition() {
			return fmt.Errorf("storing %s: %w (%s)", key, ErrChanged, r.KVReason)
		}
		return fmt.Errorf("storing %s: %w", key, r)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("storing %s: %w", key, err)
	}
	if len(res.Results) < 1 || !res.Results[0].Applied {
		if len(res.Results) >= 1 && res.Results[0].Reason != "" {
			return fmt.Errorf("storing %s: %w (%s)", key, ErrChanged, res.Results[0].Reason)
		}
		return fmt.Errorf("storing %s: the broker did not apply the put", key)
	}
	s.noteChange(ctx, res, 1, app, graph)
	return nil
}

// DeleteIf deletes the stored document of app/graph only if its row is
// still the one the caller read: row is Document.Row of the v2 row, or of
// the legacy v1 row when legacy is true (Get and Find return the v2 row
// when both exist). Deleting the v2 row also deletes a legacy row of the
// name, as Delete does; deleting a legacy row requires the v2 row to be
// still absent. The change signal is bumped in the same call, and all or
// nothing applies. A lost precondition (another writer stored or deleted
// the document meanwhile) is ErrChanged, wrapped.
func (s *Store) DeleteIf(ctx context.Context, app, graph string, legacy bool, row int64) error {
	key, other := plan.DocumentKey(app, graph), plan.LegacyTargetKey(app, graph)
	ops := []queen.KVOp{
		queen.KVDelete(s.ns, key, queen.DeleteOpts{Expect: queen.Int(row), Required: true}),
		queen.KVDelete(s.ns, other, queen.DeleteOpts{}),
	}
	if legacy {
		key, other = other, key
		ops = []queen.KVOp{
			queen.KVDelete(s.ns, key, queen.DeleteOpts{Expect: queen.Int(row), Required: true}),
			queen.KVDelete(s.ns, other, queen.DeleteOpts{Expect: queen.Int(0), Required: true}),
		}
	}
	ops = append(ops, queen.KVIncr(s.ns, revisionKey, 1, queen.IncrOpts{Forever: true}))
	res, err := s.c.KV(ctx, ops...)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	if r := res.Refusal; r != nil {
		if r.KVPrecondition() {
			return fmt.Errorf("deleting %s: %w (%s)", key, ErrChanged, r.KVReason)
		}
		return fmt.Errorf("deleting %s: %w", key, r)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	if len(res.Results) < 1 || !res.Results[0].Applied {
		return fmt.Errorf("deleting %s: %w (the broker did not apply the delete)", key, ErrChanged)
	}
	s.noteChange(ctx, res, len(ops)-1, app, graph)
	return nil
}

// Get reads the stored document of app/graph: the v2 row, else a legacy v1
// target row. found is false when neither exists.
func (s *Store) Get(ctx context.Context, app, graph string) (doc Document, found bool, err error) {
	key := plan.DocumentKey(app, graph)
	legacy := plan.LegacyTargetKey(app, graph)
	res, err := s.c.KV(ctx, queen.KVGet(s.ns, key), queen.KVGet(s.ns, legacy))
	if err != nil {
		return Document{}, false, fmt.Errorf("reading %s: %w", key, err)
	}
	if len(res.Results) != 2 {
		return Document{}, false, fmt.Errorf("reading %s: the broker answered %d results for 2 reads", key, len(res.Results))
	}
	for i, r := range res.Results {
		if r.Found {
			return Document{App: app, Graph: graph, Key: r.Key, Legacy: i == 1, Body: r.Value, Row: r.Version}, true, nil
		}
	}
	return Document{}, false, nil
}

// Delete removes the stored document of app/graph (and a legacy v1 row of
// the same name) and bumps the change signal. existed reports whether the
// v2 row was live. Queues, messages and counters are untouched.
func (s *Store) Delete(ctx context.Context, app, graph string) (existed bool, err error) {
	key := plan.DocumentKey(app, graph)
	res, err := s.c.KV(ctx,
		queen.KVDelete(s.ns, key, queen.DeleteOpts{}),
		queen.KVDelete(s.ns, plan.LegacyTargetKey(app, graph), queen.DeleteOpts{}),
		queen.KVIncr(s.ns, revisionKey, 1, queen.IncrOpts{Forever: true}),
	)
	if err != nil {
		return false, fmt.Errorf("deleting %s: %w", key, err)
	}
	if err := res.Err(); err != nil {
		return false, fmt.Errorf("deleting %s: %w", key, err)
	}
	if len(res.Results) < 1 {
		return false, fmt.Errorf("deleting %s: the broker answered no results", key)
	}
	s.noteChange(ctx, res, 2, app, graph)
	return res.Results[0].Applied, nil
}

// Revision reads the change signal: a number that differs after any
// document write or delete (0 before the first).
func (s *Store) Revision(ctx context.Context) (int64, error) {
	res, err := s.c.KV(ctx, queen.KVGet(s.ns, revisionKey))
	if err != nil {
		return 0, fmt.Errorf("reading the change signal: %w", err)
	}
	if len(res.Results) != 1 || !res.Results[0].Found {
		return 0, nil
	}
	n, err := res.Results[0].Int64()
	if err != nil {
		return 0, fmt.Errorf("reading the change signal: %w", err)
	}
	return n, nil
}

// List reads every stored document under "graph:" and "spec:", page by
// page (PageLimit rows per kv call: a call counts its limit against the
// broker's per-call key budget of 1024).
func (s *Store) List(ctx context.Context) (Listing, error) {
	out := Listing{Complete: true}
	for _, prefix := range []string{"graph:", "spec:"} {
		err := s.eachRow(ctx, prefix, func(row queen.KVRow) {
			// A row's value is valid JSON: the client's decoder checked
			// every byte of the page (queen.KVRow), so there is nothing
			// left to validate here (json.Valid on every document was
			// 12% of an idle relay's CPU at ten thousand graphs).
			app, graph, ok := splitDocumentKey(row.Key)
			if !ok || len(row.Value) == 0 || string(row.Value) == "null" {
				out.Complete = false
				return
			}
			out.Documents = append(out.Documents, Document{App: app, Graph: graph, Key: row.Key, Legacy: prefix == "spec:", Body: row.Value, Row: row.Version})
		})
		if err != nil {
			return Listing{}, fmt.Errorf("listing stored graphs under %q: %w", prefix, err)
		}
	}
	return out, nil
}

// Row is one stored document's kv row as a keys-only listing names it:
// no body, only the key, the name it parses to and the row's version
// token (which changes on every write of the row).
type Row struct {
	App, Graph string
	Key        string
	Legacy     bool
	// Version is the row's version token (Document.Row); 0 when the broker
	// sent none.
	Version int64
}

// Rows is every stored document's row, without bodies: a keys-only
// listing of "graph:" and "spec:", page by page. It costs the broker and
// the reader a small part of List (no document is read or decoded), so a
// relay can run it often to find documents created, deleted or rewritten
// behind the change log and read only those (Get). complete is false when
// a key did not parse (List would count that row as unreadable too).
func (s *Store) Rows(ctx context.Context) (rows []Row, complete bool, err error) {
	complete = true
	for _, prefix := range []string{"graph:", "spec:"} {
		err := s.eachRowOpts(ctx, prefix, "", true, func(row queen.KVRow) {
			app, graph, ok := splitDocumentKey(row.Key)
			if !ok {
				complete = false
				return
			}
			rows = append(rows, Row{App: app, Graph: graph, Key: row.Key, Legacy: prefix == "spec:", Version: row.Version})
		})
		if err != nil {
			return nil, false, fmt.Errorf("listing the keys of stored graphs under %q: %w", prefix, err)
		}
	}
	return rows, complete, nil
}

// ErrPaging is a listing whose pages did not advance: a truncated page
// without rows, or a cursor that went backwards.
var ErrPaging = errors.New("the broker's getPrefix pages did not advance")

// eachRow calls fn with every live row under prefix, in byte order, page
// by page (PageLimit rows, or fewer when the broker's 4 MiB read budget cuts
// a page), following nextAfter until a page is not truncated. A broker
// that answers truncated without nextAfter is followed from the last key
// it returned.
func (s *Store) eachRow(ctx context.Context, prefix string, fn func(queen.KVRow)) error {
	return s.eachRowAfter(ctx, prefix, "", fn)
}

// eachRowAfter is eachRow from the exclusive cursor after.
func (s *Store) eachRowAfter(ctx context.Context, prefix, after string, fn func(queen.KVRow)) error {
	return s.eachRowOpts(ctx, prefix, after, false, fn)
}

// eachRowOpts is eachRowAfter, keys only (no values) when keysOnly.
func (s *Store) eachRowOpts(ctx context.Context, prefix, after string, keysOnly bool, fn func(queen.KVRow)) error {
	for {
		res, err := s.c.KV(ctx, queen.KVGetPrefix(s.ns, prefix, queen.PrefixOpts{After: after, Limit: PageLimit, KeysOnly: keysOnly}))
		if err == nil && res.Refused() {
			err = res.Err()
		}
		if err != nil {
			return err
		}
		if len(res.Results) != 1 {
			return fmt.Errorf("the broker answered %d results for 1 listing", len(res.Results))
		}
		r := res.Results[0]
		for _, row := range r.Rows {
			fn(row)
		}
		if !r.Truncated {
			return nil
		}
		next := r.NextAfter
		if next == "" && len(r.Rows) > 0 {
			next = r.Rows[len(r.Rows)-1].Key
		}
		if next == "" || next <= after {
			return fmt.Errorf("%w (after %q, next %q)", ErrPaging, after, next)
		}
		after = next
	}
}

// splitDocumentKey parses "graph:{app}:{graph}" or "spec:{app}:{name}".
// Application and graph names never contain ':'.
func splitDocumentKey(key string) (app, graph string, ok bool) {
	_, rest, found := strings.Cut(key, ":")
	if !found {
		return "", "", false
	}
	app, graph, found = strings.Cut(rest, ":")
	if !found || app == "" || graph == "" || strings.Contains(graph, ":") {
		return "", "", false
	}
	return app, graph, true
}
