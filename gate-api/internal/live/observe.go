package live

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/vendormeter"
	"github.com/queen-mq/gate/libs/wire"
)

// observeBodyBytes bounds an observe body: the headers vendormeter reads
// (64 KiB in all) and room for JSON escaping; a bigger body is 413 before
// it is read.
const observeBodyBytes = 256 << 10

type observeBody struct {
	Status  *int              `json:"status"`
	Headers map[string]string `json:"headers"`
	Budget  *string           `json:"budget"`
}

// observe is POST …/nodes/{node}/observe: one vendor answer as the worker
// saw it (status and raw headers). Every budget of the node that mirrors a
// vendor meter reads it (libs/vendormeter) and libs/budget applies it,
// stricter only: the effective ceiling lowered to the vendor's limit, the
// counter raised to what the vendor used. A 429 or 503 with Retry-After
// also starts the node's backoff, exactly as POST …/backoff does.
func (l *Live) observe(q *httpapi.Request) *httpapi.Refusal {
	raw, bad := q.ReadRaw()
	if bad != nil {
		return bad
	}
	var b observeBody
	if bad := httpapi.DecodeStrict(raw, &b, "the observe body"); bad != nil {
		return bad
	}
	if b.Status == nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "status is required: send the vendor answer's HTTP status, e.g. 200 or 429").Field("status")
	}
	if *b.Status < 100 || *b.Status > 599 {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "status is %d: send the vendor answer's HTTP status (100–599)", *b.Status).Field("status")
	}
	if b.Headers == nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "headers is required: send the vendor answer's response headers as an object of name to value").Field("headers")
	}
	if len(b.Headers) > vendormeter.MaxHeaders {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidHeader, "headers has %d entries, over %d: send only the vendor answer's response headers", len(b.Headers), vendormeter.MaxHeaders).Field("headers")
	}
	hs := make([]vendormeter.Header, 0, len(b.Headers))
	for name, value := range b.Headers {
		hs = append(hs, vendormeter.Header{Name: name, Value: value})
	}
	// Case variants of one name join in a fixed order, whatever the map's.
	slices.SortFunc(hs, func(a, b vendormeter.Header) int { return strings.Compare(a.Name, b.Name) })
	if err := vendormeter.Check(hs); err != nil {
		return headerRefusal(err)
	}
	e, n, bad := l.backoffNode(q)
	if bad != nil {
		return bad
	}
	mirrored, bad := mirroredBudgets(l.nodeBudgets(e, n), b.Budget)
	if bad != nil {
		return bad
	}
	now := l.p.Clock.Now()
	ctx := q.Context()
	lim := l.p.Limiter()
	out := wire.Observed{OK: true, Node: n.Name, Status: *b.Status, Budgets: make([]wire.ObservedBudget, 0, len(mirrored))}
	var retry time.Duration
	for _, mb := range mirrored {
		vm := mb.VendorMeter
		ob := wire.ObservedBudget{Budget: mb.ID, Headers: vm.Headers, Declared: mb.WidestCeiling(), Ceiling: mb.WidestCeiling()}
		r, err := vendormeter.Parse(*b.Status, hs, vendormeter.Options{Family: vendormeter.Family(vm.Headers), Name: vm.Name, Now: now})
		var mis *vendormeter.Mismatch
		switch {
		case errors.As(err, &mis):
			ob.Policy, ob.Note = mis.Got, "not applied: "+mis.Error()
			out.Budgets = append(out.Budgets, ob)
			continue
		case err != nil:
			return headerRefusal(err)
		}
		if r.HasRetryAfter {
			retry = max(retry, r.RetryAfter)
		}
		got, err := lim.Observe(ctx, mb, r, now, budget.ObserveOptions{Hold: l.p.Cfg.MeterHold})
		if err != nil {
			return httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "applying the vendor's answer to budget '%s' of node '%s' failed: %v; nothing was lowered, retry", mb.ID, n.Name, err)
		}
		// A vendor's new limit, and its end, go on the timeline.
		switch {
		case got.Started:
			l.annotate(ctx, e, history.Change{Label: fmt.Sprintf("Budget %s of node %s: %s", mb.ID, n.Name, got.Note), Version: e.Plan.Version, Mode: mode(e), Node: n.Name, By: "observe"})
		case got.Cleared:
			l.annotate(ctx, e, history.Change{Label: fmt.Sprintf("Budget %s of node %s: %s again", mb.ID, n.Name, got.Note), Version: e.Plan.Version, Mode: mode(e), Node: n.Name, By: "observe"})
		}
		ob.Policy, ob.Applied, ob.ResetRule = r.Policy, true, string(r.ResetRule)
		ob.Ceiling, ob.Lowered, ob.Counter, ob.RaisedTo, ob.Note = got.Ceiling, got.Lowered, got.Counter, got.RaisedTo, got.Note
		if got.Row != nil {
			ob.VendorLimit, ob.Since, ob.Until = got.Row.Limit, got.Row.Since, got.Row.Until
		} else if r.HasLimit {
			ob.VendorLimit = r.Limit
		}
		out.Budgets = append(out.Budgets, ob)
	}
	if retry > 0 {
		seconds := min(max(int64((retry+time.Second-1)/time.Second), minBackoffSeconds), maxBackoffSeconds)
		by := "observe: vendor answered " + http.StatusText(*b.Status)
		rec, keys, bad := l.hold(q, e, n, seconds, 0, by)
		if bad != nil {
			return bad
		}
		if l.episodes.begins(e.App+"/"+e.Graph+"/"+n.Name, rec.At, rec.Until()) {
			l.annotate(ctx, e, history.Change{Label: history.LabelBackoffApplied, Version: e.Plan.Version, Mode: mode(e), Node: n.Name, By: by, Seconds: seconds})
		}
		out.Backoff = &wire.Backoff{OK: true, Node: n.Name, RetryAfterSeconds: seconds, Until: rec.Until(), Keys: plane.NonNil(keys)}
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// mirroredBudgets returns the budgets of n that mirror a vendor meter, or
// the one named id.
func mirroredBudgets(n *plan.Node, id *string) ([]*plan.Budget, *httpapi.Refusal) {
	var out []*plan.Budget
	for i := range n.Budgets {
		b := &n.Budgets[i]
		if id != nil && b.ID != *id {
			continue
		}
		if id != nil && b.VendorMeter == nil {
			return nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeNoVendorMeter, "budget '%s' of node '%s' mirrors no vendor meter: declare vendorMeter {\"headers\": \"x-ratelimit\"} on it, or name a budget that has one", b.ID, n.Name).Field("budget")
		}
		if b.VendorMeter != nil {
			out = append(out, b)
		}
	}
	switch {
	case id != nil && len(out) == 0:
		return nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeNoVendorMeter, "node '%s' has no budget '%s': name one of its budgets, or leave budget out", n.Name, clip(*id)).Field("budget")
	case len(out) == 0:
		return nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeNoVendorMeter, "no budget of node '%s' mirrors a vendor meter, so its answers change nothing: declare vendorMeter {\"headers\": \"x-ratelimit\"} (or ratelimit, github) on the node's unscoped budget", n.Name).Field("node")
	}
	return out, nil
}

// headerRefusal is the 422 of a header vendormeter could not read, naming
// it as headers.<name>.
func headerRefusal(err error) *httpapi.Refusal {
	var he *vendormeter.Error
	if errors.As(err, &he) {
		field := "headers"
		if he.Header != "" {
			field = "headers." + he.Header
		}
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidHeader, "%s; nothing was applied", he.Error()).Field(field)
	}
	return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidHeader, "%v; nothing was applied", err).Field("headers")
}

// clip shortens a caller's value for a refusal's sentence.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// maxEpisodes bounds the backoff episodes one gate-api remembers; past it,
// the episodes that ended are forgotten first (and, if none has, all of
// them: an extra annotation is the worst that can follow).
const maxEpisodes = 10_000

// holdEpisodes remembers, per node, until when the backoff that observe
// last put on the timeline holds. Workers report every 429 they meet: a
// storm of them is one backoff episode, extended by each, and the timeline
// (a PostgreSQL row per annotation) says so once, when it begins — not
// once per answer, which cost a database write per 429 and, at 2,000 a
// second, seconds of waiting per answer. Each gate-api process remembers
// its own, so a fleet of n may annotate one episode up to n times.
type holdEpisodes struct {
	mu    sync.Mutex
	until map[string]int64
}

// begins records a backoff of key held from at to until (epoch ms) and
// reports whether it begins an episode: none was held for key at at.
func (h *holdEpisodes) begins(key string, at, until int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.until == nil {
		h.until = map[string]int64{}
	}
	prev, held := h.until[key]
	held = held && prev > at
	if !held && len(h.until) >= maxEpisodes {
		for k, u := range h.until {
			if u <= at {
				delete(h.until, k)
			}
		}
		if len(h.until) >= maxEpisodes {
			clear(h.until)
		}
	}
	h.until[key] = max(prev, until)
	return !held
}
