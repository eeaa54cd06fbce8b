package load

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestChargeInCommitOnlyWhenEveryRelayReportsRiders(t *testing.T) {
	t.Parallel()
	riders := AdmissionRead{Relay: "gate-relay-1", When: "start", Path: "riders"}
	for _, tc := range []struct {
		name  string
		reads []AdmissionRead
		want  bool
	}{
		{"no relay read", nil, false},
		{"one relay on riders", []AdmissionRead{riders}, true},
		{"two relays on riders at start and end", []AdmissionRead{riders, {Relay: "gate-relay-2", Path: "riders"}, {Relay: "gate-relay-1", When: "end", Path: "riders"}}, true},
		{"one relay on separate", []AdmissionRead{{Relay: "gate-relay-1", Path: "separate"}}, false},
		{"relays disagree", []AdmissionRead{riders, {Relay: "gate-relay-2", Path: "separate", Why: "probe: riders not applied"}}, false},
		{"one relay unknown", []AdmissionRead{riders, {Relay: "the stack's own relays", Error: "not listed"}}, false},
		{"a relay fell back to separate by the end", []AdmissionRead{riders, {Relay: "gate-relay-1", When: "end", Path: "separate"}}, false},
		{"a restarted relay came back on separate", []AdmissionRead{riders, {Relay: "gate-relay-1", When: "after restart 1", Path: "separate"}, {Relay: "gate-relay-1", When: "end", Path: "riders"}}, false},
	} {
		if got := ChargeInCommit(tc.reads); got != tc.want {
			t.Errorf("%s: ChargeInCommit = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// lostAfterKill is a chaos-like paced run whose counter in second 6 stood
// one above what was forwarded (a charge whose commit never happened, the
// item redelivered later is not modelled: it is simply not pushed) while a
// relay was down.
func lostAfterKill() Observation {
	o := paced(20, 25, 25, 600, 2400)
	o.ExpectAll = true
	open := o.StartMs + 6*1000 + 10
	for i, it := range o.Items {
		if it.Path == PathBulk && it.AtMs >= open && it.AtMs < open+1000 {
			o.Items = append(o.Items[:i], o.Items[i+1:]...)
			for j, p := range o.Pushed {
				if p.ID == it.ID {
					o.Pushed = append(o.Pushed[:j], o.Pushed[j+1:]...)
					break
				}
			}
			break
		}
	}
	o.Events = []Event{{AtMs: open - 500, What: "relay killed", UntilMs: open + 3000}}
	return o
}

func TestJudgeLostChargeFailsOnlyWhenEveryRelayRanRiders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reads    []AdmissionRead
		wantPass bool
	}{
		{"riders everywhere", []AdmissionRead{{Relay: "gate-relay-1", When: "start", Path: "riders"}, {Relay: "gate-relay-1", When: "end", Path: "riders"}}, false},
		{"separate", []AdmissionRead{{Relay: "gate-relay-1", When: "start", Path: "separate"}}, true},
		{"one relay unknown", []AdmissionRead{{Relay: "gate-relay-1", When: "start", Path: "riders"}, {Relay: "gate-relay-2", When: "start", Error: "connection refused"}}, true},
	} {
		o := lostAfterKill()
		o.Admission = tc.reads
		r := Judge(o, params)
		if r.Accounting.Lost != 1 {
			t.Fatalf("%s: accounting %+v, want exactly one lost charge", tc.name, r.Accounting)
		}
		if g := gateByName(t, r, "ceiling held"); g.Pass != tc.wantPass {
			t.Errorf("%s: ceiling held pass=%v (%s), want %v", tc.name, g.Pass, g.Detail, tc.wantPass)
		}
		if r.ChargeInCommit != ChargeInCommit(tc.reads) || len(r.Admission) != len(tc.reads) {
			t.Errorf("%s: the report carries chargeInCommit=%v and %d reads, want the decision and every read", tc.name, r.ChargeInCommit, len(r.Admission))
		}
	}
}

func TestReadAdmissionReportsWhatTheRelaySays(t *testing.T) {
	t.Parallel()
	serve := func(code int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/health" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	const runs = `"graphs":[{"application":"default","graph":"load-1","version":1,"running":true}]`
	g := graphRef{"default", "load-1"}
	hc := &http.Client{}
	for _, tc := range []struct {
		name, url, path, why, errHas string
	}{
		{"riders", serve(200, `{"status":"ok","admission":{"path":"riders"},`+runs+`}`), "riders", "", ""},
		{"separate with a reason", serve(200, `{"status":"ok","admission":{"path":"separate","why":"probe: the broker ignored the rider"},`+runs+`}`), "separate", "probe: the broker ignored the rider", ""},
		{"broker down still reports", serve(503, `{"status":"unavailable","admission":{"path":"riders"},`+runs+`}`), "riders", "", ""},
		{"never runs the graph", serve(200, `{"admission":{"path":"separate"},"graphs":[{"application":"default","graph":"other","running":true}]}`), "separate", "read before default/load-1 ran on it", ""},
		{"no admission report", serve(200, `{"status":"ok",`+runs+`}`), "", "", "without an admission report"},
		{"a path that is neither", serve(200, `{"admission":{"path":"sideways"},`+runs+`}`), "", "", `"sideways"`},
		{"not JSON", serve(200, `ok`), "", "", "not JSON"},
		{"nobody listening", downURL, "", "", "reading"},
		{"not listed", "", "", "", "GATE_E2E_RELAYS"},
	} {
		a := readAdmission(context.Background(), hc, relayRef{name: tc.name, url: tc.url}, "start", g, 300*time.Millisecond)
		if a.Path != tc.path || a.Why != tc.why || (tc.errHas == "") != (a.Error == "") || !strings.Contains(a.Error, tc.errHas) {
			t.Errorf("%s: read %+v, want path %q why %q error containing %q", tc.name, a, tc.path, tc.why, tc.errHas)
		}
		if a.Relay != tc.name || a.When != "start" || a.AtMs == 0 {
			t.Errorf("%s: read %+v does not say which relay and when", tc.name, a)
		}
	}
}

// A relay reports the separate path until its probe ran, and runs no stage
// before it: the read waits until the relay runs the graph.
func TestReadAdmissionWaitsUntilTheRelayRunsTheGraph(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reads.Add(1) < 3 {
			_, _ = w.Write([]byte(`{"status":"ok","admission":{"path":"separate"},"graphs":[]}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok","admission":{"path":"riders"},"graphs":[{"application":"default","graph":"chaos-1","running":true}]}`))
	}))
	defer s.Close()
	a := readAdmission(context.Background(), &http.Client{}, relayRef{name: "gate-relay-1", url: s.URL}, "after restart 1", graphRef{"default", "chaos-1"}, 5*time.Second)
	if a.Path != "riders" || a.Why != "" || a.Error != "" || reads.Load() != 3 {
		t.Fatalf("read %+v after %d reads, want riders on the third, once the graph ran", a, reads.Load())
	}
}

func TestReportSaysWhichPathEachRelayRan(t *testing.T) {
	t.Parallel()
	o := paced(12, 25, 25, 600, 2400)
	o.Admission = []AdmissionRead{
		{Relay: "gate-relay-1", When: "start", Path: "riders"},
		{Relay: "gate-relay-2", When: "start", Path: "separate", Why: "GATE_ADMISSION=separate"},
		{Relay: "gate-relay-1", When: "end", Path: "riders"},
		{Relay: "gate-relay-2", When: "end", Path: "separate", Why: "GATE_ADMISSION=separate"},
	}
	r := Judge(o, params)
	var text bytes.Buffer
	WriteText(&text, Config{Scenario: ScenarioReplicas}, r)
	for _, want := range []string{
		"admission: gate-relay-1: riders at start, end",
		"admission: gate-relay-2: separate (GATE_ADMISSION=separate) at start, end",
		"admission rule: lenient",
	} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("text report lacks %q:\n%s", want, text.String())
		}
	}
}
