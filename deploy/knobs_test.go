package deploy

import (
	"sort"
	"sync"
	"testing"

	apiconfig "github.com/queen-mq/gate/gate-api/config"
	consoleconfig "github.com/queen-mq/gate/gate-console/config"
	recorderconfig "github.com/queen-mq/gate/gate-recorder/config"
	relayconfig "github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/libs/knob"
)

// loaders are the Gate binaries' configuration loaders, by the Dockerfile's
// BINARY. Each main calls exactly this function with os.Getenv.
var loaders = map[string]func(getenv func(string) string) error{
	"gate-api":      func(g func(string) string) error { _, err := apiconfig.Load(g); return err },
	"gate-relay":    func(g func(string) string) error { _, err := relayconfig.Load(g); return err },
	"gate-recorder": func(g func(string) string) error { _, err := recorderconfig.Load(g); return err },
	"gate-console": func(g func(string) string) error {
		_, err := consoleconfig.Load(g)
		// Read on every request, not at start (console/session.go).
		g(knob.AdminEmails.Name)
		return err
	},
}

var (
	knobsOnce sync.Once
	knobsBy   map[string]map[string]bool
)

// knobsRead is the set of environment variables each binary's loader asks
// for: recorded from the loader itself (an empty environment, where every
// knob is read for its default), so it is the code's list, not a second
// one kept by hand.
func knobsRead(t *testing.T) map[string]map[string]bool {
	t.Helper()
	knobsOnce.Do(func() {
		knobsBy = map[string]map[string]bool{}
		for bin, load := range loaders {
			seen := map[string]bool{}
			_ = load(func(k string) string { seen[k] = true; return "" })
			knobsBy[bin] = seen
		}
	})
	for bin, s := range knobsBy {
		if len(s) < 3 {
			t.Fatalf("%s's loader asked for %d variables: the recording getenv saw nothing", bin, len(s))
		}
	}
	return knobsBy
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestKnobsRecorded: the recording sees each binary's own knobs and the
// shared ones (a loader that stopped reading through getenv would empty
// every check built on this).
func TestKnobsRecorded(t *testing.T) {
	k := knobsRead(t)
	for bin, want := range map[string][]string{
		"gate-api":      {"QUEEN_URL", "GATE_BIND", "GATE_KV_NAMESPACE", "PG_HOST", "GATE_DECLARE_WAIT_MS"},
		"gate-relay":    {"QUEEN_URL", "GATE_RELAY_BIND", "GATE_STATUS_SECONDS", "GATE_NATS_URL"},
		"gate-recorder": {"QUEEN_URL", "GATE_RECORDER_BIND", "GATE_RECORDER_FLUSH_MS", "PG_HOST"},
		"gate-console":  {"GATE_PUBLIC_BIND", "GATE_DEV_EMAIL", "GOOGLE_CLIENT_ID", "QUEEN_URL"},
	} {
		for _, n := range want {
			if !k[bin][n] {
				t.Errorf("%s's loader never read %s (it read %v)", bin, n, sorted(k[bin]))
			}
		}
	}
}
