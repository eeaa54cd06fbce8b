package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

// AdmissionRead is one read of a relay's /health admission report: the path
// the relay actually runs after its probe, not the one its environment
// asked for.
type AdmissionRead struct {
	// Relay names the relay (its process name, or the URL it was read at).
	Relay string `json:"relay"`
	// URL is the relay's ops base URL ("" when gate-e2e knows none).
	URL string `json:"url,omitempty"`
	// When is the moment of the run: "start", "after restart N", "end".
	When string `json:"when"`
	AtMs int64  `json:"atMs"`
	// Path is what /health said (riders or separate); "" when unknown.
	Path string `json:"path"`
	// Why is the relay's reason for the separate path, if it gave one.
	Why string `json:"why,omitempty"`
	// Error says why the path is unknown.
	Error string `json:"error,omitempty"`
}

// ChargeInCommit decides whether a run is judged by the strict rule (a lost
// charge fails even when a relay was killed): only when at least one relay
// was read and every read of every relay reported riders. A relay on the
// separate path, a relay whose path is unknown, or no relay read at all
// means a killed relay may legitimately have charged without committing.
func ChargeInCommit(reads []AdmissionRead) bool {
	if len(reads) == 0 {
		return false
	}
	for _, a := range reads {
		if a.Path != knob.AdmissionRiders {
			return false
		}
	}
	return true
}

// AdmissionSummary says, one entry per relay in first-read order, which
// paths it reported and when, e.g. "gate-relay-1 riders (start, end)".
func AdmissionSummary(reads []AdmissionRead) []string {
	type seen struct {
		path  string
		whens []string
	}
	var order []string
	per := map[string][]*seen{}
	for _, a := range reads {
		if _, ok := per[a.Relay]; !ok {
			order = append(order, a.Relay)
		}
		p := a.Path
		if p == "" {
			p = "unknown (" + a.Error + ")"
		} else if a.Why != "" {
			p += " (" + a.Why + ")"
		}
		var s *seen
		for _, x := range per[a.Relay] {
			if x.path == p {
				s = x
			}
		}
		if s == nil {
			s = &seen{path: p}
			per[a.Relay] = append(per[a.Relay], s)
		}
		s.whens = append(s.whens, a.When)
	}
	out := make([]string, 0, len(order))
	for _, name := range order {
		var parts []string
		for _, s := range per[name] {
			parts = append(parts, s.path+" at "+strings.Join(s.whens, ", "))
		}
		out = append(out, name+": "+strings.Join(parts, "; "))
	}
	return out
}

// relayRef is a relay gate-e2e can read /health of.
type relayRef struct {
	name, url string
}

// graphRef names the graph whose stages a read waits for.
type graphRef struct {
	app, graph string
}

// readAdmission reads one relay's /health admission report once the relay
// runs g (a relay probes its broker before it starts any stage, and reports
// the separate path until then), waiting up to wait; a relay that never
// runs g within it is read as it answers last. A failed read is retried
// until wait passes too, so one slow answer does not turn the strict rule
// off.
func readAdmission(ctx context.Context, hc *http.Client, ref relayRef, when string, g graphRef, wait time.Duration) AdmissionRead {
	a := AdmissionRead{Relay: ref.name, URL: ref.url, When: when}
	if ref.url == "" {
		a.AtMs = time.Now().UnixMilli()
		a.Error = "gate-e2e did not start this stack's relays and GATE_E2E_RELAYS lists none"
		return a
	}
	deadline := time.Now().Add(wait)
	for {
		a.AtMs = time.Now().UnixMilli()
		h, err := fetchHealth(ctx, hc, ref.url)
		if err == nil {
			a.Path, a.Why, a.Error = h.path, h.why, ""
			if h.runs(g) {
				return a
			}
		} else {
			a.Path, a.Why, a.Error = "", "", err.Error()
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			if err == nil && a.Why == "" {
				a.Why = fmt.Sprintf("read before %s/%s ran on it", g.app, g.graph)
			}
			return a
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// health is what a read takes from a relay's /health.
type health struct {
	path, why string
	running   []graphRef
}

func (h health) runs(g graphRef) bool {
	for _, r := range h.running {
		if r == g {
			return true
		}
	}
	return false
}

// fetchHealth GETs base/health: admission.path and .why, and the graphs
// running there. A 503 (broker unreachable) still carries the report, so
// any status with a decodable body counts.
func fetchHealth(ctx context.Context, hc *http.Client, base string) (health, error) {
	c, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, strings.TrimRight(base, "/")+"/health", nil)
	if err != nil {
		return health{}, fmt.Errorf("relay health URL %q: %w", base, err)
	}
	res, err := hc.Do(req)
	if err != nil {
		return health{}, fmt.Errorf("reading %s/health: %w", base, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return health{}, fmt.Errorf("reading %s/health: %w", base, err)
	}
	var h wire.RelayHealth
	if err := json.Unmarshal(body, &h); err != nil {
		return health{}, fmt.Errorf("%s/health answered %d with a body that is not JSON: %w", base, res.StatusCode, err)
	}
	if h.Admission == nil {
		return health{}, fmt.Errorf("%s/health answered %d without an admission report (a gate-relay older than the report?)", base, res.StatusCode)
	}
	switch h.Admission.Path {
	case knob.AdmissionRiders, knob.AdmissionSeparate:
	default:
		return health{}, fmt.Errorf("%s/health reports admission path %q, neither %s nor %s", base, h.Admission.Path, knob.AdmissionRiders, knob.AdmissionSeparate)
	}
	out := health{path: h.Admission.Path, why: h.Admission.Why}
	for _, g := range h.Graphs {
		if g.Running {
			out.running = append(out.running, graphRef{g.App, g.Graph})
		}
	}
	return out, nil
}
