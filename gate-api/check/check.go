package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/finding"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// Exit codes of Run.
const (
	// ExitAccepted means every file was accepted.
	ExitAccepted = 0
	// ExitRefused means at least one file was refused or unreadable.
	ExitRefused = 1
	// ExitUsage means the command line was wrong.
	ExitUsage = 2
)

// RuleParse names the finding of a document no rule can judge: malformed
// JSON, an unknown or mistyped field, or an unmappable v1 document (the API
// answers it 422 like any refusal).
const RuleParse = "parse"

const usage = `usage: gate-api check [--json] [--app APP] [--name GRAPH] [--target] FILE...

Validates and compiles each FILE offline, exactly as a PUT would: the plan,
the errors, the warnings, and the broker-dependent rules that could not be
evaluated without a broker. The application and graph come from the
document's "application" and "graph" fields unless --app / --name are given.
A v1 document is mapped first; --target reads it as a v1 target (the
/targets route) and is otherwise detected from its shape.

  --json     print one JSON object per file, one per line (JSON Lines):
             {"file","accepted","errors":[...],"warnings":[...],
              "migration":[...],"unchecked":[...],"plan":{...}|null}
  --app      application to pin (the route's {app})
  --name     graph name to pin (the route's {name})
  --target   read a v1 document as a v1 target

Exit status: 0 when every file is accepted, 1 when any is refused or
unreadable, 2 for a usage error.
`

// Options is a parsed command line.
type Options struct {
	JSON   bool
	App    string
	Name   string
	Target bool
	Files  []string
}

// ParseArgs reads the command line; flags may come before or after files.
func ParseArgs(args []string) (Options, error) {
	var o Options
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
				return v, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--json", "-json":
			o.JSON = true
		case "--target", "-target":
			o.Target = true
		case "--app", "-app":
			v, err := value()
			if err != nil {
				return o, err
			}
			o.App = v
		case "--name", "-name":
			v, err := value()
			if err != nil {
				return o, err
			}
			o.Name = v
		case "--":
			o.Files = append(o.Files, args[i+1:]...)
			i = len(args)
		default:
			if strings.HasPrefix(a, "-") && a != "-" {
				return o, fmt.Errorf("unknown flag %s", a)
			}
			o.Files = append(o.Files, a)
		}
	}
	if len(o.Files) == 0 {
		return o, errors.New("no files given")
	}
	return o, nil
}

// Report is the verdict on one file; it is also the --json line.
type Report struct {
	// File is the path as given ("-" is standard input).
	File string `json:"file"`
	// Accepted is true when a PUT would answer 200.
	Accepted bool `json:"accepted"`
	// Errors and Warnings are the findings; a document no rule can judge
	// has one error with rule "parse".
	Errors   finding.List `json:"errors"`
	Warnings finding.List `json:"warnings"`
	// Migration are the v1 mapping's warnings (empty for v2).
	Migration finding.List `json:"migration"`
	// Unchecked are the rules that need a broker or the other graphs.
	Unchecked []string `json:"unchecked"`
	// Plan is the 200 response body a PUT would return; null when refused.
	Plan *plan.Response `json:"plan"`
}

// Run executes `gate-api check` with args (the words after "check") and
// returns the exit status.
func Run(args []string, stdout, stderr io.Writer) int {
	o, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "gate-api check: %v\n\n%s", err, usage)
		return ExitUsage
	}
	code := ExitAccepted
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for _, file := range o.Files {
		r := CheckFile(file, o)
		if !r.Accepted {
			code = ExitRefused
		}
		if o.JSON {
			if err := enc.Encode(r); err != nil {
				fmt.Fprintf(stderr, "gate-api check: %v\n", err)
				return ExitRefused
			}
			continue
		}
		WriteText(stdout, r)
	}
	return code
}

// CheckFile reads and compiles one file ("-" reads standard input).
func CheckFile(file string, o Options) Report {
	var body []byte
	var err error
	if file == "-" {
		body, err = io.ReadAll(os.Stdin)
	} else {
		body, err = os.ReadFile(file)
	}
	if err != nil {
		return Report{File: file, Errors: finding.List{{Rule: RuleParse, Severity: finding.Error, Message: err.Error()}}}
	}
	return Check(file, body, o)
}

// Check compiles one document offline (no broker, no other graphs).
func Check(file string, body []byte, o Options) Report {
	r := Report{File: file, Errors: finding.List{}, Warnings: finding.List{}, Migration: finding.List{}, Unchecked: []string{}}
	res, err := declare.Compile(declare.Input{App: o.App, Name: o.Name, Body: body, Target: o.Target || looksLikeTarget(body)})
	if err != nil {
		var pe *graph.ParseError
		if errors.As(err, &pe) {
			for _, p := range pe.Problems {
				r.Errors = append(r.Errors, finding.Finding{Rule: RuleParse, Severity: finding.Error, At: p.At, Message: p.Message})
			}
		} else {
			r.Errors = append(r.Errors, finding.Finding{Rule: RuleParse, Severity: finding.Error, Message: err.Error()})
		}
		return r
	}
	r.Accepted = res.Accepted()
	r.Errors = append(r.Errors, res.Findings.Errors()...)
	if missing := missingNames(body, o); len(missing) > 0 {
		// The compile refused the empty name; say where the name comes from.
		r.Errors = slices.DeleteFunc(r.Errors, func(f finding.Finding) bool { return f.Rule == declare.RuleGraphName && f.At == "/graph" })
		r.Errors = append(missing, r.Errors...)
		r.Accepted = false
	}
	r.Warnings = append(r.Warnings, res.Findings.Warnings()...)
	r.Migration = append(r.Migration, res.Migration...)
	r.Unchecked = append(r.Unchecked, res.Unchecked...)
	r.Plan = res.Response()
	return r
}

// missingNames reports the graph name a PUT takes from its route and this
// document leaves out: without --name and without the document's "graph"
// (a v1 document's "name"), check cannot compile what the PUT would, so it
// says how to supply it instead of refusing an empty name. (The application
// defaults to "default", as on a flat PUT.) A body that is not a JSON object
// is left to the parser's error.
func missingNames(body []byte, o Options) finding.List {
	var root map[string]json.RawMessage
	if json.Unmarshal(body, &root) != nil {
		return nil
	}
	var out finding.List
	if _, ok := root["graph"]; !ok && o.Name == "" {
		if _, v1 := root["name"]; !v1 {
			out = append(out, finding.Finding{Rule: declare.RuleGraphName, Severity: finding.Error, At: "/graph",
				Message: "the document has no \"graph\" field and no --name was given (a PUT takes the graph from the route): pass --name GRAPH (and --app APP, else the application is \"default\") or add the field"})
		}
	}
	return out
}

// looksLikeTarget reports whether a body without a root "nodes" field could
// be a v1 target (v2 documents always have nodes).
func looksLikeTarget(body []byte) bool {
	var root map[string]json.RawMessage
	if json.Unmarshal(body, &root) != nil {
		return false
	}
	_, hasNodes := root["nodes"]
	return !hasNodes
}

// WriteText prints a report for a person: the verdict, the findings, the
// unchecked rules and, for an accepted file, the plan's queues, budgets and
// stages.
func WriteText(w io.Writer, r Report) {
	verdict := "REFUSED"
	if r.Accepted {
		verdict = "accepted"
	}
	head := r.File + ": " + verdict
	if r.Plan != nil {
		head += fmt.Sprintf(" (%s/%s version %d)", r.Plan.Application, r.Plan.Graph, r.Plan.Version)
	}
	fmt.Fprintln(w, head)
	for _, f := range r.Errors {
		fmt.Fprintf(w, "  error   %s\n", line(f))
	}
	for _, f := range r.Warnings {
		fmt.Fprintf(w, "  warning %s\n", line(f))
	}
	for _, f := range r.Migration {
		fmt.Fprintf(w, "  v1      %s\n", line(f))
	}
	if len(r.Unchecked) > 0 {
		fmt.Fprintf(w, "  not evaluated without a broker and the other graphs: %s\n", strings.Join(r.Unchecked, ", "))
	}
	if slices.Contains(r.Unchecked, declare.RuleWatchHistory) {
		fmt.Fprintln(w, "  watch: observes without limits; the server must have PostgreSQL history (PG_HOST) and stamps watch.startedAt itself")
	}
	if r.Plan == nil {
		return
	}
	p := r.Plan.Resolved
	fmt.Fprintf(w, "  queues (namespace %s):\n", p.Namespace)
	for _, q := range p.Queues {
		parts := "-"
		if q.Partitions != nil {
			parts = fmt.Sprint(*q.Partitions)
		}
		fmt.Fprintf(w, "    %-16s %-50s ownedByGate=%t partitions=%s\n", q.Kind, q.Name, q.OwnedByGate, parts)
	}
	fmt.Fprintln(w, "  budgets:")
	for _, n := range p.Nodes {
		for _, b := range n.Budgets {
			scope := ""
			if b.ScopeBy != nil {
				scope = " scopeBy " + *b.ScopeBy
			}
			fmt.Fprintf(w, "    %s.%s %d/%dms = %d sub-windows of %d per %ds, key %s%s, ceilings %s\n",
				n.Node, b.ID, b.Count, b.TimeMs, b.SubWindows, b.CountSub, b.WindowSubSeconds, b.Key, scope, ceilings(b.Ceilings))
			if len(b.Keys) > 0 {
				fmt.Fprintf(w, "      %d limits per key (a runtime limit wins for the same value): %s\n", len(b.Keys), keyList(b.Keys, 10))
			}
		}
	}
	fmt.Fprintln(w, "  stages:")
	for _, s := range p.Stages {
		dests := make([]string, 0, len(s.Destinations))
		for _, d := range s.Destinations {
			dests = append(dests, d.Queue)
		}
		fmt.Fprintf(w, "    %s hop %d %s share %g: %s -> %s (group %s, batch %d, workers %d)\n",
			s.Path, s.Hop, s.Node, s.Share, s.Source, strings.Join(dests, ", "), s.Group, s.Batch, s.Concurrency)
	}
}

func line(f finding.Finding) string {
	if f.At == "" {
		return "[" + f.Rule + "] " + f.Message
	}
	return "[" + f.Rule + "] " + f.At + ": " + f.Message
}

// keyList is the first n limits per key in value order, "value=count", and
// how many more.
func keyList(m map[string]int64, n int) string {
	vals := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, min(n, len(vals))+1)
	for _, v := range vals[:min(n, len(vals))] {
		parts = append(parts, fmt.Sprintf("%q=%d", v, m[v]))
	}
	if len(vals) > n {
		parts = append(parts, fmt.Sprintf("… %d more", len(vals)-n))
	}
	return strings.Join(parts, ", ")
}

func ceilings(m map[string]int64) string {
	b, _ := json.Marshal(m)
	return string(b)
}
