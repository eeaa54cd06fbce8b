package graph

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every *ParseError: the body is not a readable v2
// document.
var ErrInvalid = errors.New("not a valid v2 graph document")

// Problem is one parse failure at a JSON pointer.
type Problem struct {
	// At is the JSON pointer of the offending value ("" = the whole body).
	At string `json:"at"`
	// Message says what was expected and what was found.
	Message string `json:"message"`
}

// String renders the problem as "pointer: message", with "(document)" for
// the whole body.
func (p Problem) String() string {
	at := p.At
	if at == "" {
		at = "(document)"
	}
	return at + ": " + p.Message
}

// ParseError lists every problem found while reading a document.
type ParseError struct {
	// Problems holds the failures found, at most 50 of them.
	Problems []Problem
}

// Error joins every problem with "; ".
func (e *ParseError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ParseError) Unwrap() error { return ErrInvalid }

// maxProblems caps how many problems one parse reports.
const maxProblems = 50

// Pointer appends reference tokens to a JSON pointer, escaping '~' and '/'.
func Pointer(base string, tokens ...string) string {
	n := len(base)
	for _, t := range tokens {
		n += 1 + len(t)
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteString(base)
	for _, t := range tokens {
		sb.WriteByte('/')
		if strings.ContainsAny(t, "~/") {
			t = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
		}
		sb.WriteString(t)
	}
	return sb.String()
}

// Parse reads a v2 document strictly: every object rejects unknown fields,
// numbers must have the declared type (a float is never a whole number,
// a negative is never unsigned), and each problem names its JSON pointer.
// Optional fields given as null count as absent. On failure the error is a
// *ParseError.
func Parse(body []byte) (*Document, error) {
	root, err := parseTree(body)
	if err != nil {
		return nil, &ParseError{Problems: []Problem{{Message: err.Error()}}}
	}
	r := &reader{body: body}
	d := r.document(root)
	if len(r.problems) > 0 {
		return nil, &ParseError{Problems: r.problems}
	}
	return d, nil
}

type reader struct {
	body     []byte
	problems []Problem
}

func (r *reader) fail(at, msg string) {
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, Problem{At: at, Message: msg})
	}
}

// got renders a value for "got …" messages, truncated to stay readable.
func (r *reader) got(v *value) string {
	s := string(r.body[v.start:v.end])
	if len(s) > 40 {
		cut := 37
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func (r *reader) expected(at, what string, v *value) {
	r.fail(at, "expected "+what+", got "+r.got(v))
}

// object is a checked JSON object: its members, each key allowed and given
// once. Objects are small, so lookups scan.
type object []member

func (o object) get(key string) (*value, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// fields checks an object's keys against the allowed set. Unknown and
// repeated fields are problems (the first occurrence is kept).
func (r *reader) fields(at, what string, v *value, allowed ...string) (object, bool) {
	if v.kind != kindObject {
		r.expected(at, what, v)
		return nil, false
	}
	out := object(v.kids)
	clean := true
	for i, m := range v.kids {
		known := false
		for _, a := range allowed {
			if a == m.key {
				known = true
				break
			}
		}
		repeated := false
		for _, prev := range v.kids[:i] {
			if prev.key == m.key {
				repeated = true
				break
			}
		}
		switch {
		case !known:
			clean = false
			r.fail(Pointer(at, m.key), "unknown field "+strconv.Quote(m.key)+" (known fields: "+strings.Join(allowed, ", ")+")")
		case repeated:
			clean = false
			r.fail(Pointer(at, m.key), "field "+strconv.Quote(m.key)+" is given twice")
		}
	}
	if !clean {
		out = make(object, 0, len(v.kids))
		for _, m := range v.kids {
			if _, dup := out.get(m.key); !dup {
				out = append(out, m)
			}
		}
	}
	return out, true
}

// present returns a field that is given and not null.
func present(f object, key string) *value {
	v, _ := f.get(key)
	if v == nil || v.kind == kindNull {
		return nil
	}
	return v
}

func (r *reader) required(f object, at, key, what string) *value {
	v, ok := f.get(key)
	if !ok {
		r.fail(at, "missing required field "+strconv.Quote(key)+" ("+what+")")
		return nil
	}
	if v.kind == kindNull {
		r.expected(Pointer(at, key), what, v)
		return nil
	}
	return v
}

func isInteger(v *value) bool {
	return v.kind == kindNumber && !strings.ContainsAny(v.s, ".eE")
}

func (r *reader) u32(at string, v *value) (uint32, bool) {
	if isInteger(v) {
		if n, err := strconv.ParseUint(v.s, 10, 32); err == nil {
			return uint32(n), true
		}
	}
	r.expected(at, "a whole number from 0 to 4294967295", v)
	return 0, false
}

func (r *reader) optU32(f object, at, key string) *uint32 {
	v := present(f, key)
	if v == nil {
		return nil
	}
	n, ok := r.u32(Pointer(at, key), v)
	if !ok {
		return nil
	}
	return &n
}

func (r *reader) i64(at string, v *value) (int64, bool) {
	if isInteger(v) {
		if n, err := strconv.ParseInt(v.s, 10, 64); err == nil {
			return n, true
		}
	}
	r.expected(at, "a whole number", v)
	return 0, false
}

func (r *reader) str(at string, v *value) (string, bool) {
	if v.kind != kindString {
		r.expected(at, "a string", v)
		return "", false
	}
	return v.s, true
}

func (r *reader) optStr(f object, at, key string) *string {
	v := present(f, key)
	if v == nil {
		return nil
	}
	s, ok := r.str(Pointer(at, key), v)
	if !ok {
		return nil
	}
	return &s
}

func (r *reader) optBool(f object, at, key string) *bool {
	v := present(f, key)
	if v == nil {
		return nil
	}
	if v.kind != kindBool {
		r.expected(Pointer(at, key), "true or false", v)
		return nil
	}
	b := v.b
	return &b
}

func (r *reader) document(v *value) *Document {
	f, ok := r.fields("", "a graph document (a JSON object)", v,
		"application", "graph", "version", "nodes", "paths", "maxAttempts", "counters", "watch")
	if !ok {
		return nil
	}
	d := &Document{Application: DefaultApplication}
	if s := r.optStr(f, "", "application"); s != nil {
		d.Application = *s
	}
	if s := r.optStr(f, "", "graph"); s != nil {
		d.Graph = *s
	}
	if v := r.required(f, "", "version", "a whole number from 0 to 4294967295"); v != nil {
		d.Version, _ = r.u32("/version", v)
	}
	d.MaxAttempts = r.optU32(f, "", "maxAttempts")
	if v := present(f, "counters"); v != nil {
		if cf, ok := r.fields("/counters", `an object {"windowSeconds": 60}`, v, "windowSeconds"); ok {
			c := &Counters{}
			if w := r.required(cf, "/counters", "windowSeconds", "a whole number of seconds"); w != nil {
				c.WindowSeconds, _ = r.u32("/counters/windowSeconds", w)
			}
			d.Counters = c
		}
	}
	if v := present(f, "watch"); v != nil {
		if wf, ok := r.fields("/watch", `an object {"durationSeconds": N}`, v, "durationSeconds", "startedAt"); ok {
			w := &Watch{}
			if dv := r.required(wf, "/watch", "durationSeconds", "a whole number of seconds"); dv != nil {
				w.DurationSeconds, _ = r.i64("/watch/durationSeconds", dv)
			}
			if sv := present(wf, "startedAt"); sv != nil {
				if n, ok := r.i64("/watch/startedAt", sv); ok {
					w.StartedAt = &n
				}
			}
			d.Watch = w
		}
	}
	if v := r.required(f, "", "nodes", "an object of node name to node"); v != nil {
		if v.kind != kindObject {
			r.expected("/nodes", "an object of node name to node", v)
		} else {
			d.Nodes = make(map[string]*Node, len(v.kids))
			for _, m := range v.kids {
				at := Pointer("/nodes", m.key)
				if _, dup := d.Nodes[m.key]; dup {
					r.fail(at, "node "+strconv.Quote(m.key)+" is declared twice")
					continue
				}
				if n := r.node(at, m.val); n != nil {
					d.Nodes[m.key] = n
				}
			}
		}
	}
	if v := r.required(f, "", "paths", "an array of paths"); v != nil {
		if v.kind != kindArray {
			r.expected("/paths", "an array of paths", v)
		} else {
			d.Paths = make([]Path, 0, len(v.kids))
			for i, pv := range v.kids {
				d.Paths = append(d.Paths, r.path(Pointer("/paths", strconv.Itoa(i)), pv.val))
			}
		}
	}
	return d
}

func (r *reader) node(at string, v *value) *Node {
	f, ok := r.fields(at, "a node (a JSON object)", v, "budgets", "cost", "ingress", "egress", "batch", "concurrency")
	if !ok {
		return nil
	}
	n := &Node{Cost: FixedCost(1), Budgets: []Budget{}}
	if bv := present(f, "budgets"); bv != nil {
		if bv.kind != kindArray {
			r.expected(Pointer(at, "budgets"), "an array of budgets", bv)
		} else {
			for i, b := range bv.kids {
				n.Budgets = append(n.Budgets, r.budget(Pointer(at, "budgets", strconv.Itoa(i)), b.val))
			}
		}
	}
	if cv := present(f, "cost"); cv != nil {
		n.Cost = r.cost(Pointer(at, "cost"), cv)
	}
	if iv := present(f, "ingress"); iv != nil {
		n.Ingress = r.ingress(Pointer(at, "ingress"), iv)
	}
	if ev := present(f, "egress"); ev != nil {
		n.Egress = r.egress(Pointer(at, "egress"), ev)
	}
	n.Batch = r.optU32(f, at, "batch")
	n.Concurrency = r.optU32(f, at, "concurrency")
	return n
}

func (r *reader) cost(at string, v *value) Cost {
	const what = `a whole number or an object {"path", "default", "max"}`
	if v.kind == kindNumber {
		n, _ := r.i64(at, v)
		return FixedCost(n)
	}
	if v.kind != kindObject {
		r.expected(at, what, v)
		return FixedCost(1)
	}
	f, _ := r.fields(at, what, v, "path", "default", "max")
	c := Cost{Object: true, Default: 1}
	if pv := r.required(f, at, "path", `a payload path such as "payload.units"`); pv != nil {
		c.Path, _ = r.str(Pointer(at, "path"), pv)
	}
	if dv := present(f, "default"); dv != nil {
		c.Default, _ = r.i64(Pointer(at, "default"), dv)
	}
	if mv := present(f, "max"); mv != nil {
		if n, ok := r.i64(Pointer(at, "max"), mv); ok {
			c.Max = &n
		}
	}
	return c
}

func (r *reader) ingress(at string, v *value) *Ingress {
	const what = `true, false or an object {"queue", "partitions", "http", "shed"}`
	switch v.kind {
	case kindBool:
		if !v.b {
			return nil
		}
		return &Ingress{Bool: true}
	case kindObject:
	default:
		r.expected(at, what, v)
		return nil
	}
	f, _ := r.fields(at, what, v, "queue", "partitions", "http", "shed")
	in := &Ingress{}
	if q := r.optStr(f, at, "queue"); q != nil {
		in.Queue = *q
		if *q == "" {
			r.fail(Pointer(at, "queue"), `an application-owned ingress queue needs a name; omit "queue" to let Gate own the queue`)
		}
	}
	in.Partitions = r.optU32(f, at, "partitions")
	in.HTTP = r.optBool(f, at, "http")
	in.Shed = r.optBool(f, at, "shed")
	return in
}

func (r *reader) egress(at string, v *value) *Egress {
	const what = `a queue name or an object {"queue", "group"}`
	switch v.kind {
	case kindString:
		if v.s == "" {
			r.fail(at, "the egress queue name is empty; name the queue your workers pop")
		}
		return &Egress{Queue: v.s}
	case kindObject:
	default:
		r.expected(at, what, v)
		return nil
	}
	f, _ := r.fields(at, what, v, "queue", "group")
	e := &Egress{Object: true}
	if q := r.required(f, at, "queue", "the egress queue name"); q != nil {
		e.Queue, _ = r.str(Pointer(at, "queue"), q)
		if q.kind == kindString && e.Queue == "" {
			r.fail(Pointer(at, "queue"), "the egress queue name is empty; name the queue your workers pop")
		}
	}
	if g := r.optStr(f, at, "group"); g != nil {
		e.Group = *g
	}
	return e
}

func (r *reader) budget(at string, v *value) Budget {
	f, ok := r.fields(at, "a budget (a JSON object)", v,
		"id", "count", "timeMs", "subWindows", "scopeBy", "sharedKey", "whenOp", "confidence", "source", "asOf", "vendorMeter", "keys")
	b := Budget{Confidence: DefaultConfidence}
	if !ok {
		return b
	}
	if s := r.optStr(f, at, "id"); s != nil {
		b.ID = *s
	}
	if cv := r.required(f, at, "count", "a whole number of cost units"); cv != nil {
		b.Count, _ = r.i64(Pointer(at, "count"), cv)
	}
	if tv := r.required(f, at, "timeMs", "a whole number of milliseconds"); tv != nil {
		b.TimeMs, _ = r.i64(Pointer(at, "timeMs"), tv)
	}
	b.SubWindows = r.optU32(f, at, "subWindows")
	b.ScopeBy = r.optStr(f, at, "scopeBy")
	b.SharedKey = r.optStr(f, at, "sharedKey")
	if wv := present(f, "whenOp"); wv != nil {
		if wv.kind != kindArray {
			r.expected(Pointer(at, "whenOp"), "an array of op patterns", wv)
		} else {
			b.WhenOp = make([]string, 0, len(wv.kids))
			for i, ov := range wv.kids {
				if s, ok := r.str(Pointer(at, "whenOp", strconv.Itoa(i)), ov.val); ok {
					b.WhenOp = append(b.WhenOp, s)
				}
			}
		}
	}
	if cv := present(f, "confidence"); cv != nil {
		s, ok := r.str(Pointer(at, "confidence"), cv)
		switch {
		case !ok:
		case s == ConfidenceDocumented || s == ConfidenceInferred || s == ConfidenceAssumed:
			b.Confidence = s
		default:
			r.expected(Pointer(at, "confidence"), `one of "documented", "inferred", "assumed"`, cv)
		}
	}
	if s := r.optStr(f, at, "source"); s != nil {
		b.Source = *s
	}
	if s := r.optStr(f, at, "asOf"); s != nil {
		b.AsOf = *s
	}
	if mv := present(f, "vendorMeter"); mv != nil {
		b.VendorMeter = r.vendorMeter(Pointer(at, "vendorMeter"), mv)
	}
	if kv := present(f, "keys"); kv != nil {
		b.Keys = r.keys(Pointer(at, "keys"), kv)
	}
	return b
}

// keys reads a budget's per-key counts: an object from scope value to a
// whole number. A value given twice is a problem (the first is kept).
func (r *reader) keys(at string, v *value) map[string]int64 {
	if v.kind != kindObject {
		r.expected(at, `an object from scope value to count, like {"acct-42": 500}`, v)
		return nil
	}
	out := make(map[string]int64, len(v.kids))
	for _, m := range v.kids {
		p := Pointer(at, m.key)
		if _, dup := out[m.key]; dup {
			r.fail(p, "scope value "+strconv.Quote(m.key)+" is given twice")
			continue
		}
		if n, ok := r.i64(p, m.val); ok {
			out[m.key] = n
		}
	}
	return out
}

func (r *reader) vendorMeter(at string, v *value) *VendorMeter {
	f, ok := r.fields(at, `a vendor meter (a JSON object like {"headers": "x-ratelimit"})`, v, "headers", "name")
	m := &VendorMeter{}
	if !ok {
		return m
	}
	if hv := r.required(f, at, "headers", `"ratelimit", "x-ratelimit" or "github"`); hv != nil {
		m.Headers, _ = r.str(Pointer(at, "headers"), hv)
	}
	if s := r.optStr(f, at, "name"); s != nil {
		m.Name = *s
	}
	return m
}

func (r *reader) path(at string, v *value) Path {
	f, ok := r.fields(at, "a path (a JSON object)", v, "name", "priority", "share", "nodes")
	p := Path{}
	if !ok {
		return p
	}
	if nv := r.required(f, at, "name", "the path name"); nv != nil {
		p.Name, _ = r.str(Pointer(at, "name"), nv)
	}
	if pr := r.optU32(f, at, "priority"); pr != nil {
		p.Priority = *pr
	}
	if sv := present(f, "share"); sv != nil {
		if sv.kind != kindNumber {
			r.expected(Pointer(at, "share"), "a number in (0, 1]", sv)
		} else if s, err := strconv.ParseFloat(sv.s, 64); err != nil && !math.IsInf(s, 0) {
			r.expected(Pointer(at, "share"), "a number in (0, 1]", sv)
		} else {
			p.Share = &s
		}
	}
	hv := r.required(f, at, "nodes", "an array of node names")
	if hv == nil {
		return p
	}
	if hv.kind != kindArray {
		r.expected(Pointer(at, "nodes"), "an array of node names", hv)
		return p
	}
	p.Nodes = make([]Hop, 0, len(hv.kids))
	for i, m := range hv.kids {
		el := m.val
		eat := Pointer(at, "nodes", strconv.Itoa(i))
		switch el.kind {
		case kindString:
			p.Nodes = append(p.Nodes, Hop{Names: []string{el.s}})
		case kindArray:
			h := Hop{Fanout: true, Names: make([]string, 0, len(el.kids))}
			for j, bm := range el.kids {
				bv := bm.val
				if bv.kind != kindString {
					r.expected(Pointer(eat, strconv.Itoa(j)), "a node name (a fan-out is a flat array of node names)", bv)
					continue
				}
				h.Names = append(h.Names, bv.s)
			}
			p.Nodes = append(p.Nodes, h)
		default:
			r.expected(eat, "a node name or an array of node names (a fan-out)", el)
		}
	}
	return p
}
