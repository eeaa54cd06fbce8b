package diff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/libs/wire"
)

// Lines renders d for a person, one change a line, nested details
// indented by two spaces: what gate-api diff and apply print.
func Lines(d wire.Diff) []string {
	var out []string
	add := func(indent int, format string, args ...any) {
		out = append(out, strings.Repeat("  ", indent)+fmt.Sprintf(format, args...))
	}
	switch {
	case d.Created:
		add(0, "new graph at version %d: nothing was stored under this name", deref(d.ToVersion))
	case d.Deleted:
		add(0, "deleted at version %d", deref(d.FromVersion))
	case !d.Changed:
		add(0, "no change: the stored document (version %d) is this document byte for byte", deref(d.FromVersion))
		return out
	case deref(d.FromVersion) != deref(d.ToVersion):
		add(0, "version %d → %d", deref(d.FromVersion), deref(d.ToVersion))
	default:
		add(0, "version %d, changed in place (same version)", deref(d.ToVersion))
	}
	if d.Mode != nil {
		what := "limits activated: budgets are enforced"
		if d.Mode.To == wire.ModeWatch {
			what = "observed only: no budget is enforced while in Watch"
		}
		add(0, "mode: %s → %s (%s)", d.Mode.From, d.Mode.To, what)
	}
	for _, s := range d.Settings {
		add(0, "setting %s: %s → %s", s.Field, orNone(s.From), orNone(s.To))
	}
	for _, n := range d.Nodes {
		add(0, "node %s: %s", n.Node, n.Change)
		for _, f := range n.Fields {
			add(1, "%s: %s → %s", f.Field, orNone(f.From), orNone(f.To))
		}
		for _, b := range n.Budgets {
			add(1, "%s", budgetLine(b))
		}
	}
	for _, p := range d.Paths {
		add(0, "%s", pathLine(p))
	}
	for _, q := range d.Queues {
		add(0, "%s", queueLine(q))
	}
	for _, g := range d.Groups {
		add(0, "%s", groupLine(g))
	}
	for _, c := range d.Counters {
		shared := ""
		if c.Shared {
			shared = " (an application-wide sharedKey counter: every graph charging it sees the new window)"
		}
		add(0, "counter %s (%s.%s): sub-window %s → %s, %d → %d per sub-window; the live counter keeps its %s TTL until it ends%s",
			c.Key, c.Node, c.Budget, Seconds(c.FromWindowSeconds), Seconds(c.ToWindowSeconds), c.FromCountSub, c.ToCountSub, Seconds(c.FromWindowSeconds), shared)
	}
	return out
}

// Summary is d in one line of at most 300 bytes: the history list's
// summary of a revision.
func Summary(d wire.Diff) string {
	var parts []string
	for _, l := range Lines(d) {
		if detail, ok := strings.CutPrefix(l, "  "); ok && len(parts) > 0 {
			last := &parts[len(parts)-1]
			if strings.HasSuffix(*last, ")") {
				*last = (*last)[:len(*last)-1] + ", " + detail + ")"
			} else {
				*last = strings.TrimSuffix(*last, ": changed") + " (" + detail + ")"
			}
			continue
		}
		parts = append(parts, l)
	}
	s := strings.Join(parts, "; ")
	if len(s) > 300 {
		cut := 297
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func deref(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}

func orNone(p *string) string {
	if p == nil {
		return "(none)"
	}
	return *p
}

// rate renders count per timeMs: "100 per 1 s", "5 per 500 ms".
func rate(count, timeMs int64) string {
	return fmt.Sprintf("%d per %s", count, millis(timeMs))
}

func millis(ms int64) string {
	if ms%1000 != 0 {
		return strconv.FormatInt(ms, 10) + " ms"
	}
	return Seconds(ms / 1000)
}

func budgetLine(b wire.BudgetChange) string {
	switch b.Change {
	case wire.ChangeAdded:
		return "budget " + b.Budget + ": added, " + budgetText(b.To)
	case wire.ChangeRemoved:
		return "budget " + b.Budget + ": removed (was " + budgetText(b.From) + ")"
	}
	f, t := b.From, b.To
	var parts []string
	if f.Count != t.Count || f.TimeMs != t.TimeMs {
		parts = append(parts, rate(f.Count, f.TimeMs)+" → "+rate(t.Count, t.TimeMs))
	}
	plain := func(b *wire.BudgetShape) bool { return b.SubWindows == 1 && b.WindowSubSeconds*1000 == b.TimeMs }
	if f.SubWindows != t.SubWindows || f.WindowSubSeconds != t.WindowSubSeconds || (f.CountSub != t.CountSub && !(plain(f) && plain(t))) {
		parts = append(parts, fmt.Sprintf("enforced as %d per %s → %d per %s (%d → %d sub-windows)",
			f.CountSub, Seconds(f.WindowSubSeconds), t.CountSub, Seconds(t.WindowSubSeconds), f.SubWindows, t.SubWindows))
	}
	if !eqText(f.ScopeBy, t.ScopeBy) {
		parts = append(parts, "scoped by "+orNone(f.ScopeBy)+" → "+orNone(t.ScopeBy))
	}
	if !eqText(f.SharedKey, t.SharedKey) {
		parts = append(parts, "sharedKey "+orNone(f.SharedKey)+" → "+orNone(t.SharedKey))
	}
	if !slices.Equal(f.WhenOp, t.WhenOp) {
		parts = append(parts, "whenOp "+ops(f.WhenOp)+" → "+ops(t.WhenOp))
	}
	if f.Key != t.Key {
		parts = append(parts, "counter "+f.Key+" → "+t.Key+" (a new counter starts empty)")
	}
	if c := ceilingsChange(f.Ceilings, t.Ceilings); c != "" {
		parts = append(parts, c)
	}
	return "budget " + b.Budget + ": " + strings.Join(parts, "; ")
}

func budgetText(s *wire.BudgetShape) string {
	out := rate(s.Count, s.TimeMs)
	if s.SubWindows > 1 || s.WindowSubSeconds*1000 != s.TimeMs {
		out += fmt.Sprintf(" (enforced as %d per %s)", s.CountSub, Seconds(s.WindowSubSeconds))
	}
	if s.ScopeBy != nil {
		out += ", per " + *s.ScopeBy
	}
	if len(s.WhenOp) > 0 {
		out += ", when op " + ops(s.WhenOp)
	}
	if s.SharedKey != nil {
		out += ", shared as " + *s.SharedKey
	}
	return out
}

func ops(o []string) string {
	if len(o) == 0 {
		return "(every op)"
	}
	return strings.Join(o, ", ")
}

// ceilingsChange renders the paths whose ceiling changes.
func ceilingsChange(from, to []wire.PathCeiling) string {
	index := func(cs []wire.PathCeiling) map[string]int64 {
		m := map[string]int64{}
		for _, c := range cs {
			m[c.Path] = c.Ceiling
		}
		return m
	}
	f, t := index(from), index(to)
	var parts []string
	for _, p := range union(f, t) {
		a, inF := f[p]
		b, inT := t[p]
		switch {
		case !inF:
			parts = append(parts, fmt.Sprintf("%s (new) %d", p, b))
		case !inT:
			parts = append(parts, fmt.Sprintf("%s %d (gone)", p, a))
		case a != b:
			parts = append(parts, fmt.Sprintf("%s %d → %d", p, a, b))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "ceilings " + strings.Join(parts, ", ")
}

func hops(hs []wire.Hop) string {
	var parts []string
	for _, h := range hs {
		if len(h.Names) == 1 {
			parts = append(parts, h.Names[0])
			continue
		}
		parts = append(parts, "{"+strings.Join(h.Names, ", ")+"}")
	}
	return strings.Join(parts, " → ")
}

func shares(s []wire.NodeShare) string {
	var parts []string
	for _, n := range s {
		parts = append(parts, fmt.Sprintf("%s %g", n.Node, n.Share))
	}
	return strings.Join(parts, ", ")
}

func pathLine(p wire.PathChange) string {
	switch p.Change {
	case wire.ChangeAdded:
		return fmt.Sprintf("path %s: added, %s (priority %d, shares %s)", p.Path, hops(p.To.Hops), p.To.Priority, shares(p.To.Shares))
	case wire.ChangeRemoved:
		return fmt.Sprintf("path %s: removed (was %s)", p.Path, hops(p.From.Hops))
	}
	var parts []string
	if a, b := hops(p.From.Hops), hops(p.To.Hops); a != b {
		parts = append(parts, "hops "+a+" → "+b)
	}
	if p.From.Priority != p.To.Priority {
		parts = append(parts, fmt.Sprintf("priority %d → %d", p.From.Priority, p.To.Priority))
	}
	if a, b := shares(p.From.Shares), shares(p.To.Shares); a != b {
		parts = append(parts, "shares "+a+" → "+b)
	} else if !eqFloat(p.From.Share, p.To.Share) {
		parts = append(parts, "declared share "+floatText(p.From.Share)+" → "+floatText(p.To.Share))
	}
	return "path " + p.Path + ": " + strings.Join(parts, "; ")
}

func eqFloat(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func floatText(p *float64) string {
	if p == nil {
		return "(default)"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

func queueLine(q wire.QueueChange) string {
	switch q.Change {
	case wire.ChangeAdded:
		how := "created bare if the broker does not know it, never configured by Gate"
		if q.To.OwnedByGate {
			how = "configured by Gate with its lease, retry limit and retention"
		} else if q.To.Kind == "ingress (yours)" {
			how = "yours: Gate reads it and never configures it"
		}
		return fmt.Sprintf("queue %s: provisioned (%s; %s)", q.Queue, q.To.Kind, how)
	case wire.ChangeRemoved:
		return fmt.Sprintf("queue %s: left unused (was %s): no stage reads or writes it; the broker keeps it and its messages", q.Queue, q.From.Kind)
	}
	return fmt.Sprintf("queue %s: %s → %s", q.Queue, queueText(q.From), queueText(q.To))
}

func queueText(s *wire.QueueShape) string {
	out := s.Kind
	if s.Partitions != nil {
		out += fmt.Sprintf(", %d partitions", *s.Partitions)
	}
	return out
}

func groupLine(g wire.GroupChange) string {
	if g.Change == wire.ChangeRemoved {
		return fmt.Sprintf("group %s on %s: no longer read (was %s at %s); it stays on the queue with its cursor", g.Group, g.Queue, g.Path, g.Node)
	}
	start := "at the head of the retained log: every message the queue retains is work for it"
	if g.SeedsAt == wire.SeedsAtTail {
		start = "at the graph's start (interior queue)"
	}
	return fmt.Sprintf("group %s on %s: created by the relays for %s at %s, starting %s", g.Group, g.Queue, g.Path, g.Node, start)
}
