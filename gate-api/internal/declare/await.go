package declare

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// declarePoll is how often a declare waiting for a relay re-reads the
// relays' status from kv.
const declarePoll = 100 * time.Millisecond

// awaitRunning waits up to GATE_DECLARE_WAIT_MS until some relay replica
// reports running each graph of app at the version just stored (want:
// graph → version), re-reading the relays' status every declarePoll. It
// answers which graphs run and, for each that does not, a note saying why.
//
// It runs without the declare lock: it only reads kv and the catalog, so
// other declares proceed meanwhile. A graph deleted, or stored at another
// version, while it waits is no longer waited for (its note says so).
// The wait also ends early when the request ends or gate-api shuts down.
// With the knob at 0 it answers from the cached status without waiting.
func (d *Declarer) awaitRunning(ctx context.Context, app string, want map[string]uint32) (map[string]bool, map[string]string) {
	wait := d.p.Cfg.DeclareWait
	deadline := d.p.Clock.Now().Add(wait)
	running := make(map[string]bool, len(want))
	notes := map[string]string{}
	settled := map[string]bool{}
	failures := map[string]string{}
	ended := ""
	for {
		if wait > 0 {
			_ = d.p.Cat.ReadStatus(ctx, declarePoll/2)
		}
		for name, version := range want {
			if settled[name] {
				continue
			}
			ok, failure := d.p.Cat.RunsVersion(app, name, int64(version))
			if ok {
				running[name], settled[name] = true, true
				continue
			}
			if note := d.superseded(app, name, version); note != "" {
				notes[name], settled[name] = note, true
				continue
			}
			if failure != "" {
				failures[name] = failure
			}
		}
		if len(settled) == len(want) || wait <= 0 || !d.p.Clock.Now().Before(deadline) {
			break
		}
		t := d.p.Clock.NewTimer(min(declarePoll, deadline.Sub(d.p.Clock.Now())))
		select {
		case <-t.C():
			continue
		case <-ctx.Done():
			ended = "the request ended"
		case <-d.closing:
			ended = "gate-api is shutting down"
		}
		t.Stop()
		break
	}
	for name, version := range want {
		if settled[name] {
			continue
		}
		running[name] = false
		notes[name] = d.notRunningNote(app, name, version, failures[name], ended)
	}
	return running, notes
}

// superseded says, when the catalog no longer holds version of app/name
// (a delete or another declare landed during the wait), what happened; ""
// while it still does.
func (d *Declarer) superseded(app, name string, version uint32) string {
	e := d.p.Cat.Lookup(app, name)
	switch {
	case e == nil:
		return fmt.Sprintf("'%s/%s' was deleted while this declare waited for a relay to run version %d; nothing will run it", app, name, version)
	case e.Doc != nil && e.Doc.Version != version:
		return fmt.Sprintf("version %d of '%s/%s' was stored while this declare waited for a relay to run version %d; that declaration's answer says whether it runs", e.Doc.Version, app, name, version)
	}
	return ""
}

// notRunningNote explains a declare answered before any relay ran it.
func (d *Declarer) notRunningNote(app, name string, version uint32, failure, ended string) string {
	var b strings.Builder
	if d.p.Cfg.DeclareWait <= 0 {
		fmt.Fprintf(&b, "no gate-relay replica had reported running version %d of '%s/%s' yet (waiting is off: GATE_DECLARE_WAIT_MS=0)", version, app, name)
	} else {
		fmt.Fprintf(&b, "no gate-relay replica reported running version %d of '%s/%s' within GATE_DECLARE_WAIT_MS (%d ms)", version, app, name, d.p.Cfg.DeclareWait.Milliseconds())
	}
	if ended != "" {
		fmt.Fprintf(&b, " (the wait ended early: %s)", ended)
	}
	if failure != "" {
		fmt.Fprintf(&b, "; a replica failed to start it: %s", failure)
	}
	fmt.Fprintf(&b, "; the document is stored and relays pick it up on the change signal or within GATE_RECONCILE_SECONDS (%d s); until one runs it, pushes and re-entries are queued (Gate-Relay: none) and wait in the ingress queue, and ETA answers 503 — check that a gate-relay replica runs against this broker and kv namespace (%s), or raise GATE_DECLARE_WAIT_MS",
		d.p.Cfg.ReconcileSeconds, d.p.Cfg.KVNamespace)
	return b.String()
}

// notRunning lists the graphs of running that do not run, sorted.
func notRunning(running map[string]bool) []string {
	var out []string
	for name, ok := range running {
		if !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
