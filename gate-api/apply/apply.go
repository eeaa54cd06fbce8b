package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/diff"
	"github.com/queen-mq/gate/libs/stack/gateapi"
	"github.com/queen-mq/gate/libs/wire"
)

// Exit codes of Diff and Apply. When files end differently, the exit code
// is the first of unavailable, conflict, refused, changes that any file
// had.
const (
	// ExitOK: every file was diffed (diff), or applied or already stored
	// as it is (apply).
	ExitOK = 0
	// ExitRefused: a document was refused — unreadable, a declare rule
	// (422, 409 version-bump, version-order, ingress-owner …), or any
	// other 4xx. apply stored none of the files when it was refused in the
	// dry run.
	ExitRefused = 1
	// ExitUsage: the command line was wrong; nothing was sent.
	ExitUsage = 2
	// ExitConflict: the stored document changed between the dry run and
	// the write (412), or kept changing under the write (409
	// declare-contended): run diff again and review.
	ExitConflict = 3
	// ExitUnavailable: gate-api did not answer, answered 5xx, or answered
	// something that is not gate-api's.
	ExitUnavailable = 4
	// ExitChanges: diff --exit-code found a file that would change.
	ExitChanges = 5
)

// DefaultTimeout bounds each request to gate-api (a PUT waits for a relay
// up to GATE_DECLARE_WAIT_MS, 5 s by default, before it answers).
const DefaultTimeout = 60 * time.Second

// Options is a parsed command line of diff or apply.
type Options struct {
	// Server is gate-api's base URL (GATE_BIND's plane).
	Server string
	// App and Name pin the application and graph (else the document's
	// application and graph fields; the application defaults to
	// "default").
	App, Name string
	// Target sends each document to the /targets/{name} route.
	Target bool
	// JSON prints one JSON object per file (JSON Lines).
	JSON bool
	// ExitCode makes diff exit ExitChanges when a file would change.
	ExitCode bool
	// Timeout bounds each request.
	Timeout time.Duration
	// Files are the documents, in order; "-" is standard input.
	Files []string
}

const usageFmt = `usage: gate-api %[1]s --server URL [--app APP] [--name GRAPH] [--target] [--json]%[2]s [--timeout 60s] FILE...

%[3]s

  --server   gate-api's base URL (the application plane, GATE_BIND), e.g.
             http://gate-api:8788
  --app      application to declare under (else the document's
             "application", else "default")
  --name     graph name (else the document's "graph"); one FILE only
  --target   send each document to /v1/apps/{app}/targets/{name}
  --json     print one JSON object per file (JSON Lines)%[4]s
  --timeout  bound on each request to gate-api (default 60s)

Exit status: 0 %[5]s, 1 a document was refused (a declare rule, an
unreadable file), 2 usage, 3 a conflict (the stored document changed since
the dry run: 412, or kept changing: 409 declare-contended), 4 gate-api
unavailable (unreachable, 5xx)%[6]s.
`

func usage(cmd string) string {
	if cmd == "diff" {
		return fmt.Sprintf(usageFmt, cmd, " [--exit-code]",
			"Prints what PUT-ing each FILE would change on the server (a dry run:\nnothing is stored), against the document stored now.",
			"\n  --exit-code  exit 5 when a file would change",
			"when every file was diffed", ", 5 (with --exit-code) a file would change")
	}
	return fmt.Sprintf(usageFmt, cmd, "",
		"Applies each FILE: first a dry run of every file (nothing is stored if\nany is refused), printing what changes; then a PUT of each changed file\nwith If-Match naming the stored document the dry run compared against\n(If-None-Match: * for a new graph), so a change made meanwhile by anyone\nelse is a conflict, never overwritten. Files already stored as they are\nare left alone.",
		"", "when every file was applied or unchanged", "")
}

// ParseArgs reads the command line of cmd ("diff" or "apply"); flags may
// come before or after files.
func ParseArgs(cmd string, args []string) (Options, error) {
	o := Options{Timeout: DefaultTimeout}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, inline, hasInline := strings.Cut(a, "=")
		value := func() (string, error) {
			if hasInline && strings.HasPrefix(name, "-") {
				return inline, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		var err error
		switch strings.TrimPrefix(name, "-") {
		case "-json", "json":
			o.JSON = true
		case "-target", "target":
			o.Target = true
		case "-exit-code", "exit-code":
			if cmd != "diff" {
				return o, fmt.Errorf("--exit-code is diff's: apply always exits non-zero on a refusal or conflict")
			}
			o.ExitCode = true
		case "-server", "server":
			o.Server, err = value()
		case "-app", "app":
			o.App, err = value()
		case "-name", "name":
			o.Name, err = value()
		case "-timeout", "timeout":
			var v string
			if v, err = value(); err == nil {
				o.Timeout, err = time.ParseDuration(v)
				if err == nil && o.Timeout <= 0 {
					err = fmt.Errorf("--timeout %s is not positive", v)
				}
			}
		case "-":
			o.Files = append(o.Files, args[i+1:]...)
			i = len(args)
		default:
			if strings.HasPrefix(a, "-") && a != "-" {
				return o, fmt.Errorf("unknown flag %s", a)
			}
			o.Files = append(o.Files, a)
		}
		if err != nil {
			return o, err
		}
	}
	switch {
	case o.Server == "":
		return o, errors.New("--server is required: gate-api's base URL, e.g. --server http://gate-api:8788")
	case len(o.Files) == 0:
		return o, errors.New("no files given")
	case o.Name != "" && len(o.Files) > 1:
		return o, fmt.Errorf("--name names one graph, and %d files were given: name each graph in its document's \"graph\" field instead", len(o.Files))
	}
	u, err := url.Parse(o.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return o, fmt.Errorf("--server %q is not an http(s) URL with a host (and no credentials): e.g. http://gate-api:8788", o.Server)
	}
	return o, nil
}

// Outcomes of a file, the outcome field of the --json lines.
const (
	OutcomeUnchanged   = "unchanged"
	OutcomeChanges     = "changes"
	OutcomeApplied     = "applied"
	OutcomeSkipped     = "skipped"
	OutcomeRefused     = "refused"
	OutcomeConflict    = "conflict"
	OutcomeUnavailable = "unavailable"
)

// Report is what happened to one file; it is also the --json line.
type Report struct {
	File        string `json:"file"`
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// Version is the document's version (0 when unread).
	Version uint32 `json:"version"`
	// StoredETag is the stored document's tag the dry run compared
	// against (null: nothing stored); ETag the tag of the document as
	// stored (applied) or as it would be.
	StoredETag *string `json:"storedEtag"`
	ETag       string  `json:"etag,omitempty"`
	// Diff is the dry run's diff (null when refused before it).
	Diff *wire.Diff `json:"diff"`
	// Warnings are the declare warnings.
	Warnings []string `json:"warnings"`
	// Revision is the history revision an apply recorded.
	Revision *int64 `json:"revision,omitempty"`
	// Running and RunningNote are the applied PUT's.
	Running     bool   `json:"running,omitempty"`
	RunningNote string `json:"runningNote,omitempty"`
	// Error, Status and Refusal say why a file was refused, conflicted or
	// not sent.
	Error   string      `json:"error,omitempty"`
	Status  int         `json:"status,omitempty"`
	Refusal *wire.Error `json:"refusal,omitempty"`
}

// RunDiff is `gate-api diff`: args are the words after "diff".
func RunDiff(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, "diff", args, stdin, stdout, stderr)
}

// RunApply is `gate-api apply`: args are the words after "apply".
func RunApply(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, "apply", args, stdin, stdout, stderr)
}

// file is one document read from the command line.
type file struct {
	name, app, graph string
	body             []byte
	target           bool
}

func run(ctx context.Context, cmd string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := ParseArgs(cmd, args)
	if err != nil {
		fmt.Fprintf(stderr, "gate-api %s: %v\n\n%s", cmd, err, usage(cmd))
		return ExitUsage
	}
	client := gateapi.New(o.Server, &http.Client{Timeout: o.Timeout})
	out := &printer{w: stdout, json: o.JSON}
	reports := make([]Report, len(o.Files))
	files := make([]file, len(o.Files))
	for i, name := range o.Files {
		reports[i] = Report{File: name, Warnings: []string{}}
		f, problem := readFile(name, o, stdin)
		files[i] = f
		reports[i].Application, reports[i].Graph = f.app, f.graph
		if problem != "" {
			reports[i].Outcome, reports[i].Error = OutcomeRefused, problem
			continue
		}
		dryRun(ctx, client, f, &reports[i])
	}
	if cmd == "diff" {
		for i := range reports {
			out.report(&reports[i], false)
		}
		out.summary(cmd, reports)
		code := exitOf(reports)
		if code == ExitOK && o.ExitCode && anyOutcome(reports, OutcomeChanges) {
			code = ExitChanges
		}
		return code
	}
	if code := exitOf(reports); code != ExitOK {
		for i := range reports {
			if reports[i].Outcome == OutcomeChanges {
				reports[i].Outcome = OutcomeSkipped
			}
			out.report(&reports[i], false)
		}
		out.line("nothing was applied: every file's dry run must pass first")
		out.summary(cmd, reports)
		return code
	}
	stopped := false
	for i := range reports {
		r := &reports[i]
		switch {
		case r.Outcome != OutcomeChanges:
		case stopped:
			r.Outcome = OutcomeSkipped
		default:
			write(ctx, client, files[i], r)
			stopped = r.Outcome != OutcomeApplied
		}
		out.report(r, true)
	}
	if stopped {
		out.line("stopped at the first file that was not applied: the files after it were not sent (those before it are applied)")
	}
	out.summary(cmd, reports)
	return exitOf(reports)
}

// readFile reads one document and names its graph: --app/--name, else the
// document's application and graph (a v1 document's name: its last
// dot-segment, as the sync names it). A problem is the reason it cannot be
// sent.
func readFile(name string, o Options, stdin io.Reader) (file, string) {
	f := file{name: name, app: o.App, graph: o.Name, target: o.Target}
	var err error
	if name == "-" {
		f.body, err = io.ReadAll(io.LimitReader(stdin, maxFileBytes+1))
	} else {
		f.body, err = readLimited(name)
	}
	if err != nil {
		return f, fmt.Sprintf("reading %s: %v", name, err)
	}
	if len(f.body) > maxFileBytes {
		return f, fmt.Sprintf("%s is over %d bytes, gate-api's limit for a document (2 MiB)", name, maxFileBytes)
	}
	var id struct {
		Application *string         `json:"application"`
		Graph       *string         `json:"graph"`
		Name        *string         `json:"name"`
		Nodes       json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(f.body, &id); err != nil {
		return f, fmt.Sprintf("%s is not a JSON object: %v", name, err)
	}
	if f.app == "" {
		f.app = "default"
		if id.Application != nil && *id.Application != "" {
			f.app = *id.Application
		}
	}
	if f.graph == "" {
		switch {
		case id.Graph != nil && *id.Graph != "":
			f.graph = *id.Graph
		case id.Name != nil && *id.Name != "":
			f.graph = (*id.Name)[strings.LastIndexByte(*id.Name, '.')+1:]
		}
	}
	if f.graph == "" {
		return f, fmt.Sprintf("%s names no graph: add its \"graph\" field (keep the name in the file, next to what it declares) or pass --name GRAPH", name)
	}
	if len(id.Nodes) == 0 {
		// A document without nodes is a v1 target: its route reads it.
		f.target = true
	}
	return f, ""
}

// maxFileBytes is gate-api's body limit for a document.
const maxFileBytes = 2 << 20

func readLimited(name string) ([]byte, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, maxFileBytes+1))
}

// dryRun asks gate-api what storing f would change.
func dryRun(ctx context.Context, c *gateapi.Client, f file, r *Report) {
	d, err := c.DryRun(ctx, f.app, f.graph, f.body, gateapi.Write{Target: f.target})
	if err != nil {
		fail(r, err)
		return
	}
	r.Version, r.StoredETag, r.ETag, r.Diff, r.Warnings = d.Version, d.StoredETag, d.ETag, &d.Diff, d.Warnings
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	r.Outcome = OutcomeUnchanged
	if d.Diff.Changed {
		r.Outcome = OutcomeChanges
	}
}

// write PUTs f over exactly the document its dry run compared against.
func write(ctx context.Context, c *gateapi.Client, f file, r *Report) {
	w := gateapi.Write{Target: f.target, IfNoneMatch: "*"}
	if r.StoredETag != nil {
		w = gateapi.Write{Target: f.target, IfMatch: *r.StoredETag}
	}
	d, err := c.Put(ctx, f.app, f.graph, f.body, w)
	if err != nil {
		fail(r, err)
		return
	}
	r.Outcome, r.ETag, r.Revision, r.Running, r.RunningNote = OutcomeApplied, d.ETag, d.Revision, d.Running, d.RunningNote
	r.Diff = &d.Diff
}

// fail classifies a failed request: 412 and 409 declare-contended are a
// conflict, another 4xx a refusal, anything else unavailability.
func fail(r *Report, err error) {
	r.Error = err.Error()
	var se *gateapi.StatusError
	if !errors.As(err, &se) {
		r.Outcome = OutcomeUnavailable
		return
	}
	r.Status, r.Error = se.Status, se.Message
	if se.Body.Code != "" {
		body := se.Body
		r.Refusal = &body
	}
	switch {
	case se.Status == http.StatusPreconditionFailed || se.Body.Code == wire.CodeDeclareContended:
		r.Outcome = OutcomeConflict
	case se.Status >= 400 && se.Status < 500 && se.Body.Code != "":
		r.Outcome = OutcomeRefused
	default:
		r.Outcome = OutcomeUnavailable
	}
}

func anyOutcome(rs []Report, outcome string) bool {
	for _, r := range rs {
		if r.Outcome == outcome {
			return true
		}
	}
	return false
}

// exitOf is the exit code of the reports: the first of unavailable,
// conflict, refused that any file had, else ExitOK.
func exitOf(rs []Report) int {
	switch {
	case anyOutcome(rs, OutcomeUnavailable):
		return ExitUnavailable
	case anyOutcome(rs, OutcomeConflict):
		return ExitConflict
	case anyOutcome(rs, OutcomeRefused):
		return ExitRefused
	}
	return ExitOK
}

// printer writes the reports as text or JSON Lines.
type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) line(s string) {
	if !p.json {
		fmt.Fprintln(p.w, s)
	}
}

func (p *printer) report(r *Report, applying bool) {
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(r)
		return
	}
	head := r.File
	if r.Graph != "" {
		head += " → " + r.Application + "/" + r.Graph
	}
	switch r.Outcome {
	case OutcomeRefused:
		fmt.Fprintf(p.w, "%s: REFUSED%s: %s\n", head, statusText(r), r.Error)
		p.rules(r)
		return
	case OutcomeUnavailable:
		fmt.Fprintf(p.w, "%s: gate-api UNAVAILABLE%s: %s\n", head, statusText(r), r.Error)
		return
	case OutcomeConflict:
		fmt.Fprintf(p.w, "%s: CONFLICT%s: %s\n", head, statusText(r), r.Error)
		if r.Refusal != nil && r.Refusal.ChangedBy != "" && r.Refusal.ChangedAt != nil {
			fmt.Fprintf(p.w, "  changed by %s at %s; run gate-api diff again and review before applying\n", r.Refusal.ChangedBy, time.UnixMilli(*r.Refusal.ChangedAt).UTC().Format(time.RFC3339))
		}
		return
	}
	verdict := map[string]string{
		OutcomeUnchanged: "unchanged (stored as it is)",
		OutcomeChanges:   "would change",
		OutcomeApplied:   "applied",
		OutcomeSkipped:   "not applied",
	}[r.Outcome]
	if applying && r.Outcome == OutcomeApplied {
		verdict = fmt.Sprintf("applied: version %d stored as %s", r.Version, r.ETag)
		if r.Revision != nil {
			verdict += fmt.Sprintf(", history revision %d", *r.Revision)
		}
	}
	fmt.Fprintf(p.w, "%s: %s\n", head, verdict)
	if r.Diff != nil && r.Outcome != OutcomeUnchanged {
		for _, l := range diff.Lines(*r.Diff) {
			fmt.Fprintln(p.w, "  "+l)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(p.w, "  warning "+w)
	}
	if r.Outcome == OutcomeApplied && !r.Running && r.RunningNote != "" {
		fmt.Fprintln(p.w, "  note: "+r.RunningNote)
	}
}

func statusText(r *Report) string {
	if r.Status == 0 {
		return ""
	}
	code := ""
	if r.Refusal != nil {
		code = " " + string(r.Refusal.Code)
		if r.Refusal.Rule != "" {
			code += " [" + r.Refusal.Rule + "]"
		}
	}
	return fmt.Sprintf(" (%d%s)", r.Status, code)
}

func (p *printer) rules(r *Report) {
	if r.Refusal == nil {
		return
	}
	for _, pr := range r.Refusal.Problems {
		at := ""
		if pr.At != "" {
			at = " " + pr.At
		}
		fmt.Fprintf(p.w, "  [%s]%s: %s\n", pr.Rule, at, pr.Message)
	}
}

func (p *printer) summary(cmd string, rs []Report) {
	if p.json {
		return
	}
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.Outcome]++
	}
	var parts []string
	for _, o := range []string{OutcomeApplied, OutcomeChanges, OutcomeUnchanged, OutcomeSkipped, OutcomeRefused, OutcomeConflict, OutcomeUnavailable} {
		if counts[o] > 0 {
			word := map[string]string{OutcomeChanges: "would change", OutcomeSkipped: "not applied"}[o]
			if word == "" {
				word = o
			}
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], word))
		}
	}
	fmt.Fprintf(p.w, "gate-api %s: %d file(s): %s\n", cmd, len(rs), strings.Join(parts, ", "))
}
