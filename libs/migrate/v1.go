package migrate

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The v1 field sets (spec §7.1). Every v1 object rejects a field outside its set.
var (
	targetFields = []string{"application", "name", "version", "egress", "budgets", "lanes",
		"cost", "pacing", "admitted", "shardBy", "shards"}
	graphFields = []string{"application", "name", "version", "nodes", "edges", "consume", "breach"}
	nodeFields  = []string{"entry", "budgets", "cost", "lanes", "pacing", "admitted",
		"shardBy", "shards", "egress"}
	budgetFields = []string{"id", "cap", "periodSeconds", "alignment", "match", "scope",
		"maxKeys", "store", "confidence", "source", "asOf"}
	laneFields     = []string{"name", "cap", "concurrency", "floor", "default"}
	costFields     = []string{"field", "default", "max"}
	pacingFields   = []string{"leaseSeconds", "batch"}
	admittedFields = []string{"partitionBy", "partitions"}
	matchFields    = []string{"op"}
	edgeFields     = []string{"from", "to", "priority"}
	breachFields   = []string{"when", "retryTo", "maxAttempts"}
	whenFields     = []string{"status", "outcome"}
)

// v1 defaults (spec §7.1).
const (
	defaultLeaseSeconds    = 1
	defaultPacingBatch     = 200
	defaultPartitionBy     = "connection"
	defaultPartitions      = 64
	defaultLaneConcurrency = 8
	defaultApplication     = "default"
	defaultLaneName        = "default"
)

// v1Target is a v1 TargetSpec: one limited node.
type v1Target struct {
	application string
	name        string
	version     uint32
	node        v1Node
}

// v1Graph is a v1 GraphSpec.
type v1Graph struct {
	application string
	name        string
	version     uint32
	nodes       []v1Node // in ascending name order
	edges       []v1Edge
	edgesAt     string
	hasEdges    bool
	consume     []string
	breach      []v1Breach
}

// v1Node is the limited part shared by a TargetSpec (at the root) and a
// GraphSpec node.
type v1Node struct {
	at        string // JSON pointer of the object holding the node's fields
	name      string
	entry     bool
	hasEntry  bool
	egress    string
	hasEgress bool
	budgets   []v1Budget
	hasBudget bool
	cost      v1Cost
	lanes     []v1Lane
	hasLanes  bool
	pacing    v1Pacing
	admitted  v1Admitted
	shardBy   string
	hasShard  bool
	shards    int64
	hasShards bool
}

type v1Budget struct {
	at            string
	id            string
	cap           float64
	periodSeconds int64
	alignment     string
	hasMatch      bool
	matchOp       []string
	scope         []string
	hasScope      bool
	maxKeys       int64
	hasMaxKeys    bool
	store         string
	hasStore      bool
	confidence    string
	source        *string
	asOf          *string
}

type v1Cost struct {
	field      string
	def        float64
	max        float64
	hasMax     bool
	hasDefault bool
}

type v1Lane struct {
	at          string
	name        string
	cap         laneCap
	concurrency int64
	floor       float64
	isDefault   bool
}

// laneCap is a parsed lane cap: "ceiling", "ceiling-minus-measured",
// "absolute:N" or "share:F".
type laneCap struct {
	kind  string
	value float64
	text  string
}

const (
	capCeiling         = "ceiling"
	capCeilingMeasured = "ceiling-minus-measured"
	capAbsolute        = "absolute"
	capShare           = "share"
)

type v1Pacing struct {
	present      bool
	leaseSeconds int64
	batch        int64
}

type v1Admitted struct {
	present     bool
	partitionBy string
	partitions  int64
}

type v1Edge struct {
	from, to string
	priority int64
}

type v1Breach struct {
	retryTo     string
	hasRetryTo  bool
	maxAttempts int64
}

func readTarget(body []byte, routeName bool) (*v1Target, error) {
	root, err := readObject(body, "", "TargetSpec", targetFields...)
	if err != nil {
		return nil, err
	}
	t := &v1Target{application: defaultApplication}
	if _, err := root.decode("application", "a string", &t.application); err != nil {
		return nil, err
	}
	if err := root.name(routeName, &t.name); err != nil {
		return nil, err
	}
	if err := root.need("version", "an unsigned 32-bit integer", &t.version); err != nil {
		return nil, err
	}
	if !root.has("budgets") {
		return nil, root.missing("budgets", "an array of v1 budgets")
	}
	node, err := readNodeFields(root, "", false)
	if err != nil {
		return nil, err
	}
	t.node = *node
	return t, nil
}

func readGraph(body []byte, routeName bool) (*v1Graph, error) {
	root, err := readObject(body, "", "GraphSpec", graphFields...)
	if err != nil {
		return nil, err
	}
	g := &v1Graph{application: defaultApplication}
	if _, err := root.decode("application", "a string", &g.application); err != nil {
		return nil, err
	}
	if err := root.name(routeName, &g.name); err != nil {
		return nil, err
	}
	if err := root.need("version", "an unsigned 32-bit integer", &g.version); err != nil {
		return nil, err
	}
	var nodes map[string]json.RawMessage
	if err := root.need("nodes", "an object of v1 nodes keyed by name", &nodes); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(nodes) {
		at := pointer("/nodes", name)
		obj, err := readObject(nodes[name], at, "node", nodeFields...)
		if err != nil {
			return nil, err
		}
		n, err := readNodeFields(obj, name, true)
		if err != nil {
			return nil, err
		}
		g.nodes = append(g.nodes, *n)
	}
	edges, hasEdges, err := root.list("edges", "v1 edges")
	if err != nil {
		return nil, err
	}
	g.hasEdges, g.edgesAt = hasEdges, root.ptr("edges")
	for i, raw := range edges {
		o, err := readObject(raw, pointer(g.edgesAt, i), "edge", edgeFields...)
		if err != nil {
			return nil, err
		}
		var e v1Edge
		if err := o.need("from", "a node name", &e.from); err != nil {
			return nil, err
		}
		if err := o.need("to", "a node name", &e.to); err != nil {
			return nil, err
		}
		if _, err := o.decode("priority", "an integer", &e.priority); err != nil {
			return nil, err
		}
		g.edges = append(g.edges, e)
	}
	if _, err := root.decode("consume", "an array of node names", &g.consume); err != nil {
		return nil, err
	}
	rules, _, err := root.list("breach", "v1 breach rules")
	if err != nil {
		return nil, err
	}
	for i, raw := range rules {
		o, err := readObject(raw, pointer(root.ptr("breach"), i), "breach rule", breachFields...)
		if err != nil {
			return nil, err
		}
		var b v1Breach
		if wr, ok := o.raw("when"); ok {
			if _, err := readObject(wr, o.ptr("when"), "breach condition", whenFields...); err != nil {
				return nil, err
			}
		}
		if b.hasRetryTo, err = o.decode("retryTo", "a string", &b.retryTo); err != nil {
			return nil, err
		}
		if _, err := o.decode("maxAttempts", "an integer", &b.maxAttempts); err != nil {
			return nil, err
		}
		g.breach = append(g.breach, b)
	}
	return g, nil
}

// readNodeFields reads the limited fields of a target root or a graph node.
func readNodeFields(o *object, name string, graphNode bool) (*v1Node, error) {
	n := &v1Node{at: o.at, name: name}
	var err error
	if graphNode {
		if n.hasEntry, err = o.decode("entry", "a boolean", &n.entry); err != nil {
			return nil, err
		}
	}
	if n.hasEgress, err = o.decode("egress", "a string", &n.egress); err != nil {
		return nil, err
	}
	budgets, hasBudgets, err := o.list("budgets", "v1 budgets")
	if err != nil {
		return nil, err
	}
	n.hasBudget = hasBudgets
	for i, raw := range budgets {
		b, err := readBudget(raw, pointer(o.ptr("budgets"), i))
		if err != nil {
			return nil, err
		}
		n.budgets = append(n.budgets, *b)
	}
	cr, ok := o.raw("cost")
	if !ok {
		return nil, o.missing("cost", "an object {field, default, max}")
	}
	if n.cost, err = readCost(cr, o.ptr("cost")); err != nil {
		return nil, err
	}
	lanes, hasLanes, err := o.list("lanes", "v1 lanes")
	if err != nil {
		return nil, err
	}
	n.hasLanes = hasLanes
	for i, raw := range lanes {
		l, err := readLane(raw, pointer(o.ptr("lanes"), i))
		if err != nil {
			return nil, err
		}
		n.lanes = append(n.lanes, *l)
	}
	n.pacing = v1Pacing{leaseSeconds: defaultLeaseSeconds, batch: defaultPacingBatch}
	if pr, ok := o.raw("pacing"); ok {
		p, err := readObject(pr, o.ptr("pacing"), "pacing", pacingFields...)
		if err != nil {
			return nil, err
		}
		n.pacing.present = true
		if _, err := p.decode("leaseSeconds", "an integer", &n.pacing.leaseSeconds); err != nil {
			return nil, err
		}
		if _, err := p.decode("batch", "an integer", &n.pacing.batch); err != nil {
			return nil, err
		}
	}
	n.admitted = v1Admitted{partitionBy: defaultPartitionBy, partitions: defaultPartitions}
	if ar, ok := o.raw("admitted"); ok {
		a, err := readObject(ar, o.ptr("admitted"), "admitted", admittedFields...)
		if err != nil {
			return nil, err
		}
		n.admitted.present = true
		if pb, ok, err := a.enum("partitionBy", "connection", "entity", "none"); err != nil {
			return nil, err
		} else if ok {
			n.admitted.partitionBy = pb
		}
		if _, err := a.decode("partitions", "an integer", &n.admitted.partitions); err != nil {
			return nil, err
		}
	}
	if n.shardBy, n.hasShard, err = o.enum("shardBy", "host", "entity", "account", "connection", "tenant"); err != nil {
		return nil, err
	}
	if n.hasShards, err = o.decode("shards", "an integer", &n.shards); err != nil {
		return nil, err
	}
	return n, nil
}

func readBudget(raw json.RawMessage, at string) (*v1Budget, error) {
	o, err := readObject(raw, at, "budget", budgetFields...)
	if err != nil {
		return nil, err
	}
	b := &v1Budget{at: at}
	if err := o.need("id", "a string", &b.id); err != nil {
		return nil, err
	}
	if err := o.need("cap", "a number", &b.cap); err != nil {
		return nil, err
	}
	if err := o.need("periodSeconds", "an integer", &b.periodSeconds); err != nil {
		return nil, err
	}
	var ok bool
	if b.alignment, ok, err = o.enum("alignment", "rolling", "calendar"); err != nil {
		return nil, err
	} else if !ok {
		return nil, o.missing("alignment", `"rolling" or "calendar"`)
	}
	if mr, ok := o.raw("match"); ok {
		m, err := readObject(mr, o.ptr("match"), "match", matchFields...)
		if err != nil {
			return nil, err
		}
		b.hasMatch = true
		if _, err := m.decode("op", "an array of strings", &b.matchOp); err != nil {
			return nil, err
		}
	}
	if b.hasScope, err = o.decode("scope", "an array of dimension names", &b.scope); err != nil {
		return nil, err
	}
	if b.hasMaxKeys, err = o.decode("maxKeys", "an integer", &b.maxKeys); err != nil {
		return nil, err
	}
	b.store = "gate"
	var store string
	if store, b.hasStore, err = o.enum("store", "gate", "kv"); err != nil {
		return nil, err
	} else if b.hasStore {
		b.store = store
	}
	if b.confidence, ok, err = o.enum("confidence", "documented", "inferred", "assumed"); err != nil {
		return nil, err
	} else if !ok {
		return nil, o.missing("confidence", `"documented", "inferred" or "assumed"`)
	}
	var s string
	if ok, err := o.decode("source", "a string", &s); err != nil {
		return nil, err
	} else if ok {
		b.source = &s
	}
	var a string
	if ok, err := o.decode("asOf", "a string", &a); err != nil {
		return nil, err
	} else if ok {
		b.asOf = &a
	}
	return b, nil
}

func readCost(raw json.RawMessage, at string) (v1Cost, error) {
	o, err := readObject(raw, at, "cost", costFields...)
	if err != nil {
		return v1Cost{}, err
	}
	c := v1Cost{def: 1}
	if err := o.need("field", "a payload field name", &c.field); err != nil {
		return c, err
	}
	if c.hasDefault, err = o.decode("default", "a number", &c.def); err != nil {
		return c, err
	}
	if c.hasMax, err = o.decode("max", "a number", &c.max); err != nil {
		return c, err
	}
	if !c.hasMax {
		c.max = c.def
	}
	return c, nil
}

func readLane(raw json.RawMessage, at string) (*v1Lane, error) {
	o, err := readObject(raw, at, "lane", laneFields...)
	if err != nil {
		return nil, err
	}
	l := &v1Lane{at: at, concurrency: defaultLaneConcurrency}
	if err := o.need("name", "a string", &l.name); err != nil {
		return nil, err
	}
	var text string
	if err := o.need("cap", `"ceiling", "ceiling-minus-measured", "absolute:N" or "share:F"`, &text); err != nil {
		return nil, err
	}
	if l.cap, err = parseLaneCap(text, o.ptr("cap")); err != nil {
		return nil, err
	}
	if _, err := o.decode("concurrency", "an integer", &l.concurrency); err != nil {
		return nil, err
	}
	if _, err := o.decode("floor", "a number", &l.floor); err != nil {
		return nil, err
	}
	if _, err := o.decode("default", "a boolean", &l.isDefault); err != nil {
		return nil, err
	}
	return l, nil
}

func parseLaneCap(text, at string) (laneCap, error) {
	switch text {
	case capCeiling, capCeilingMeasured:
		return laneCap{kind: text, text: text}, nil
	}
	kind, num, ok := strings.Cut(text, ":")
	if ok && (kind == capAbsolute || kind == capShare) {
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return laneCap{kind: kind, value: v, text: text}, nil
		}
	}
	return laneCap{}, shapeErr(at,
		`a v1 lane cap must be "ceiling", "ceiling-minus-measured", "absolute:N" or "share:F" with a finite number, got %q`, text)
}
