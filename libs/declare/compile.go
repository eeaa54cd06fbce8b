package declare

import (
	"errors"
	"fmt"

	"github.com/queen-mq/gate/libs/finding"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/migrate"
	"github.com/queen-mq/gate/libs/plan"
)

// ErrUnreadable is wrapped by Compile's error when the body is neither a
// readable v2 document nor a readable v1 document.
var ErrUnreadable = errors.New("neither a v2 nor a v1 document")

// MaxWorkers is the most workers a compiled graph may run in total.
const MaxWorkers = 4096

// Compile parses, checks and compiles one declaration.
//
// The error is non-nil only for a body that no rule can judge: malformed
// JSON, unknown or mistyped fields (the error names the JSON pointer), or a
// v1 body that cannot be mapped. Every refusal of a readable document is a
// Finding with Severity Error in Result.Findings, and then Result.Plan is
// nil.
func Compile(in Input) (*Result, error) {
	res := &Result{}
	doc, err := graph.Parse(in.Body)
	if err != nil {
		if !migrate.IsV1(in.Body) {
			return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		doc, err = mapV1(in, res)
		if err != nil {
			return nil, err
		}
	}
	if in.App != "" {
		doc.Application = in.App
	}
	if in.Name != "" {
		doc.Graph = in.Name
	}
	res.Doc = doc
	c := newChecker(doc, in, res)
	c.run()
	return res, nil
}

// mapV1 maps a v1 body (a v1 target on a target route, a v1 graph on a
// graph route) and parses the mapped document.
func mapV1(in Input, res *Result) (*graph.Document, error) {
	shape := migrate.ShapeGraph
	if in.Target {
		shape = migrate.ShapeTarget
	}
	v2, warnings, err := migrate.Map(in.Body, migrate.Options{Shape: shape, Application: in.App, Name: in.Name})
	if err != nil {
		kind := "graph"
		if in.Target {
			kind = "target"
		}
		return nil, fmt.Errorf("%w: not a v2 document, and not a v1 %s document: %w", ErrUnreadable, kind, err)
	}
	doc, err := graph.Parse(v2)
	if err != nil {
		return nil, fmt.Errorf("%w: the v1 document mapped to an unreadable v2 document: %w", ErrUnreadable, err)
	}
	res.V1, res.Migration = true, warnings
	return doc, nil
}

// checker runs the catalogue over one document.
type checker struct {
	doc   *graph.Document
	in    Input
	res   *Result
	names []string
	// shares are the effective shares per node and path; visitors the
	// visiting paths per node in path order.
	shares   map[string]map[string]float64
	visitors map[string][]string
	// stored are the other graphs, parsed once.
	stored []storedDoc
	// self is the previous version of this graph, when known.
	self *storedDoc
	// facts caches broker answers per queue.
	facts map[string]QueueFacts
}

type storedDoc struct {
	app, name string
	doc       *graph.Document
	running   bool
	inStore   bool
}

func newChecker(doc *graph.Document, in Input, res *Result) *checker {
	return &checker{doc: doc, in: in, res: res, names: doc.NodeNames()}
}

func (c *checker) add(rule, at, msg string, nums map[string]float64) {
	sev := finding.Error
	if r, ok := catalogue[rule]; ok {
		sev = r.Severity
	}
	c.res.Findings = append(c.res.Findings, finding.Finding{Rule: rule, Severity: sev, At: at, Message: msg, Numbers: nums})
}

func (c *checker) unchecked(rule string) {
	for _, r := range c.res.Unchecked {
		if r == rule {
			return
		}
	}
	c.res.Unchecked = append(c.res.Unchecked, rule)
}

func (c *checker) run() {
	if c.in.Stored == nil && c.in.Related != nil {
		c.in.Stored = c.in.Related(Links(c.doc))
	}
	c.loadStored()
	c.naming()
	if len(c.doc.Nodes) == 0 || len(c.doc.Paths) == 0 {
		c.sortUnchecked()
		return
	}
	// Every (path, node) stage runs at least one worker, so a document
	// with more stages than MaxWorkers cannot run whatever else it says:
	// refuse it before the checks whose cost grows with paths × nodes.
	if n := minStages(c.doc); n > MaxWorkers {
		c.add(RuleWorkerTotal, "/paths", fmt.Sprintf("the graph has %d (path, node) stages, and each runs at least one worker: over the limit of %d workers in total (every worker holds a long-poll on the broker), so it was refused before the other checks; declare fewer paths or hops, or split the graph", n, MaxWorkers),
			map[string]float64{"stages": float64(n), "limit": MaxWorkers})
		c.sortUnchecked()
		return
	}
	c.shares = plan.Shares(c.doc)
	c.visitors = plan.Visitors(c.doc)
	c.shape()
	c.budgets()
	c.shareRules()
	c.ownership()
	c.watchRules()
	c.historyRules()
	if c.res.Findings.HasErrors() {
		c.sortUnchecked()
		return
	}
	p := plan.Build(c.doc, c.planOptions())
	if total := p.TotalWorkers(); total > MaxWorkers {
		c.add(RuleWorkerTotal, "", fmt.Sprintf("the compiled graph runs %d workers in total, over the limit of %d: every worker holds a long-poll on the broker; lower node concurrency (or GATE_STAGE_CONCURRENCY), or split the graph", total, MaxWorkers),
			map[string]float64{"workers": float64(total), "limit": MaxWorkers})
	}
	c.warnings()
	if !c.res.Findings.HasErrors() {
		c.conflicts()
	}
	if !c.res.Findings.HasErrors() {
		c.res.Plan = p
	}
	c.sortUnchecked()
}

// planOptions are the Input's options plus the partition counts the broker
// reported for application-owned ingress queues.
func (c *checker) planOptions() plan.Options {
	opts := c.in.Options
	if c.in.Facts == nil {
		return opts
	}
	observed := map[string]uint32{}
	for k, v := range opts.ObservedPartitions {
		observed[k] = v
	}
	for _, name := range c.names {
		if in := c.doc.Nodes[name].Ingress; in.Named() {
			if f := c.fact(in.Queue); f.Exists && f.Partitions > 0 {
				observed[in.Queue] = uint32(min(f.Partitions, 1<<31))
			}
		}
	}
	opts.ObservedPartitions = observed
	return opts
}

// fact probes a queue once per compile.
func (c *checker) fact(queue string) QueueFacts {
	if c.facts == nil {
		c.facts = map[string]QueueFacts{}
	}
	if f, ok := c.facts[queue]; ok {
		return f
	}
	f := c.in.Facts.Queue(queue)
	c.facts[queue] = f
	return f
}

func (c *checker) sortUnchecked() {
	order := make(map[string]int, len(Catalogue))
	for i, r := range Catalogue {
		order[r.Name] = i
	}
	u := c.res.Unchecked
	for i := 1; i < len(u); i++ {
		for j := i; j > 0 && order[u[j]] < order[u[j-1]]; j-- {
			u[j], u[j-1] = u[j-1], u[j]
		}
	}
}

// loadStored parses the stored documents once; unreadable ones are skipped
// (the store treats them as an incomplete read).
func (c *checker) loadStored() {
	for _, s := range c.in.Stored {
		d := s.Doc
		if d == nil {
			var err error
			d, err = graph.Parse(s.Body)
			if err != nil {
				if !migrate.IsV1(s.Body) {
					continue
				}
				v2, _, merr := migrate.Map(s.Body, migrate.Options{Application: s.App, Name: s.Name})
				if merr != nil {
					continue
				}
				if d, err = graph.Parse(v2); err != nil {
					continue
				}
			}
		}
		cp := *d
		if s.App != "" {
			cp.Application = s.App
		}
		if s.Name != "" {
			cp.Graph = s.Name
		}
		sd := storedDoc{app: cp.Application, name: cp.Graph, doc: &cp, running: s.Running, inStore: !s.NotStored}
		if sd.app == c.doc.Application && sd.name == c.doc.Graph {
			if c.self == nil || sd.running {
				self := sd
				c.self = &self
			}
			continue
		}
		c.stored = append(c.stored, sd)
	}
}

// ingressQueue is the ingress queue of a node, "" when it has none.
func ingressQueue(d *graph.Document, name string) string {
	n := d.Nodes[name]
	if n == nil || n.Ingress == nil {
		return ""
	}
	if n.Ingress.Named() {
		return n.Ingress.Queue
	}
	return plan.IngressQueue(d.Application, d.Graph, name)
}

// minStages is the number of distinct (path, node) pairs of d's paths: a
// lower bound of the compiled plan's stages, counted in one pass.
func minStages(d *graph.Document) int {
	n := 0
	for _, p := range d.Paths {
		seen := make(map[string]struct{}, len(p.Nodes))
		for _, el := range p.Nodes {
			for _, name := range el.Names {
				if _, dup := seen[name]; !dup {
					seen[name] = struct{}{}
					n++
				}
			}
		}
	}
	return n
}
