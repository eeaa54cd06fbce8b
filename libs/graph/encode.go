package graph

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// MarshalJSON writes the document in its stored shape: fields in a fixed
// order, nodes by name, absent optionals omitted; budgets, cost, confidence,
// priority and a path's nodes always written. Parse(Marshal(d)) yields an
// equal document.
func (d *Document) MarshalJSON() ([]byte, error) {
	w := &writer{b: make([]byte, 0, 1024)}
	w.raw('{')
	w.key("application")
	w.str(d.Application)
	w.comma()
	w.key("graph")
	w.str(d.Graph)
	w.comma()
	w.key("version")
	w.uint(uint64(d.Version))
	if d.MaxAttempts != nil {
		w.comma()
		w.key("maxAttempts")
		w.uint(uint64(*d.MaxAttempts))
	}
	if d.Counters != nil {
		w.comma()
		w.key("counters")
		w.raw('{')
		w.key("windowSeconds")
		w.uint(uint64(d.Counters.WindowSeconds))
		w.raw('}')
	}
	if d.Watch != nil {
		w.comma()
		w.key("watch")
		w.raw('{')
		w.key("durationSeconds")
		w.int(d.Watch.DurationSeconds)
		if d.Watch.StartedAt != nil {
			w.comma()
			w.key("startedAt")
			w.int(*d.Watch.StartedAt)
		}
		w.raw('}')
	}
	w.comma()
	w.key("nodes")
	w.raw('{')
	for i, name := range d.NodeNames() {
		if i > 0 {
			w.comma()
		}
		w.key(name)
		w.node(d.Nodes[name])
	}
	w.raw('}')
	w.comma()
	w.key("paths")
	w.raw('[')
	for i := range d.Paths {
		if i > 0 {
			w.comma()
		}
		w.path(&d.Paths[i])
	}
	w.raw(']')
	w.raw('}')
	return w.b, nil
}

type writer struct{ b []byte }

func (w *writer) raw(c byte) { w.b = append(w.b, c) }
func (w *writer) comma()     { w.b = append(w.b, ',') }
func (w *writer) str(s string) {
	q, _ := json.Marshal(s)
	w.b = append(w.b, q...)
}
func (w *writer) key(k string) {
	w.str(k)
	w.raw(':')
}
func (w *writer) uint(n uint64) { w.b = strconv.AppendUint(w.b, n, 10) }
func (w *writer) int(n int64)   { w.b = strconv.AppendInt(w.b, n, 10) }
func (w *writer) bool(v bool)   { w.b = strconv.AppendBool(w.b, v) }
func (w *writer) float(f float64) {
	q, err := json.Marshal(f)
	if err != nil {
		q = []byte("null")
	}
	w.b = append(w.b, q...)
}

func (w *writer) node(n *Node) {
	w.raw('{')
	w.key("budgets")
	w.raw('[')
	for i := range n.Budgets {
		if i > 0 {
			w.comma()
		}
		w.budget(&n.Budgets[i])
	}
	w.raw(']')
	w.comma()
	w.key("cost")
	if n.Cost.Object {
		w.raw('{')
		w.key("path")
		w.str(n.Cost.Path)
		w.comma()
		w.key("default")
		w.int(n.Cost.Default)
		if n.Cost.Max != nil {
			w.comma()
			w.key("max")
			w.int(*n.Cost.Max)
		}
		w.raw('}')
	} else {
		w.int(n.Cost.Fixed)
	}
	if in := n.Ingress; in != nil {
		w.comma()
		w.key("ingress")
		if in.Bool {
			w.bool(true)
		} else {
			w.raw('{')
			first := true
			sep := func() {
				if !first {
					w.comma()
				}
				first = false
			}
			if in.Queue != "" {
				sep()
				w.key("queue")
				w.str(in.Queue)
			}
			if in.Partitions != nil {
				sep()
				w.key("partitions")
				w.uint(uint64(*in.Partitions))
			}
			if in.HTTP != nil {
				sep()
				w.key("http")
				w.bool(*in.HTTP)
			}
			if in.Shed != nil {
				sep()
				w.key("shed")
				w.bool(*in.Shed)
			}
			w.raw('}')
		}
	}
	if e := n.Egress; e != nil {
		w.comma()
		w.key("egress")
		if e.Object {
			w.raw('{')
			w.key("queue")
			w.str(e.Queue)
			if e.Group != "" {
				w.comma()
				w.key("group")
				w.str(e.Group)
			}
			w.raw('}')
		} else {
			w.str(e.Queue)
		}
	}
	if n.Batch != nil {
		w.comma()
		w.key("batch")
		w.uint(uint64(*n.Batch))
	}
	if n.Concurrency != nil {
		w.comma()
		w.key("concurrency")
		w.uint(uint64(*n.Concurrency))
	}
	w.raw('}')
}

func (w *writer) budget(b *Budget) {
	w.raw('{')
	if b.ID != "" {
		w.key("id")
		w.str(b.ID)
		w.comma()
	}
	w.key("count")
	w.int(b.Count)
	w.comma()
	w.key("timeMs")
	w.int(b.TimeMs)
	if b.SubWindows != nil {
		w.comma()
		w.key("subWindows")
		w.uint(uint64(*b.SubWindows))
	}
	if b.ScopeBy != nil {
		w.comma()
		w.key("scopeBy")
		w.str(*b.ScopeBy)
	}
	if b.SharedKey != nil {
		w.comma()
		w.key("sharedKey")
		w.str(*b.SharedKey)
	}
	if b.WhenOp != nil {
		w.comma()
		w.key("whenOp")
		w.raw('[')
		for i, op := range b.WhenOp {
			if i > 0 {
				w.comma()
			}
			w.str(op)
		}
		w.raw(']')
	}
	w.comma()
	w.key("confidence")
	conf := b.Confidence
	if conf == "" {
		conf = DefaultConfidence
	}
	w.str(conf)
	if b.Source != "" {
		w.comma()
		w.key("source")
		w.str(b.Source)
	}
	if b.AsOf != "" {
		w.comma()
		w.key("asOf")
		w.str(b.AsOf)
	}
	if m := b.VendorMeter; m != nil {
		w.comma()
		w.key("vendorMeter")
		w.raw('{')
		w.key("headers")
		w.str(m.Headers)
		if m.Name != "" {
			w.comma()
			w.key("name")
			w.str(m.Name)
		}
		w.raw('}')
	}
	if b.Keys != nil {
		w.comma()
		w.key("keys")
		w.raw('{')
		for i, k := range slices.Sorted(maps.Keys(b.Keys)) {
			if i > 0 {
				w.comma()
			}
			w.key(k)
			w.int(b.Keys[k])
		}
		w.raw('}')
	}
	w.raw('}')
}

func (w *writer) path(p *Path) {
	w.raw('{')
	w.key("name")
	w.str(p.Name)
	w.comma()
	w.key("priority")
	w.uint(uint64(p.Priority))
	if p.Share != nil {
		w.comma()
		w.key("share")
		w.float(*p.Share)
	}
	w.comma()
	w.key("nodes")
	w.raw('[')
	for i, h := range p.Nodes {
		if i > 0 {
			w.comma()
		}
		if h.Fanout {
			w.raw('[')
			for j, n := range h.Names {
				if j > 0 {
					w.comma()
				}
				w.str(n)
			}
			w.raw(']')
		} else if len(h.Names) > 0 {
			w.str(h.Names[0])
		} else {
			w.str("")
		}
	}
	w.raw(']')
	w.raw('}')
}
