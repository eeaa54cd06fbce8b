package gatetest

import (
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/miniqueen"
)

// Broker is the Queen-compatible broker one test talks to, with a name prefix
// that no other test uses.
type Broker struct {
	// URL is the broker's base URL, e.g. "http://127.0.0.1:6632" (no trailing
	// slash).
	URL string
	// Mini is the in-process fake when the broker is miniqueen, giving direct
	// state access, clock control and fault injection; nil on a real broker.
	Mini *miniqueen.Server
	// Source says where the broker came from (env, container or embedded).
	Source Source
	// Prefix is unique to this test run; see Prefix. Queue, Group and
	// Namespace build names under it.
	Prefix string
}

// NewBroker returns the broker for t, chosen as the package documentation
// describes, skipping or failing t when it cannot be provided. An embedded
// miniqueen is closed when t ends.
func NewBroker(t testing.TB) *Broker {
	t.Helper()
	d := Decide(ComponentBroker, inputsFor(ComponentBroker))
	b := &Broker{Source: d.Source, Prefix: Prefix(t)}
	switch d.Source {
	case SourceEnv:
		b.URL = d.URL
	case SourceContainer:
		url, err := queenContainer.get(startQueenContainer)
		if err != nil {
			missing(t, "broker: "+err.Error()+"; set "+EnvQueenURL+" to a running broker, or "+EnvNoDocker+"=1 to use miniqueen")
		}
		b.URL = url
	case SourceEmbedded:
		b.Mini = miniqueen.RunT(t)
		b.URL = b.Mini.URL()
	default:
		refuse(t, d)
	}
	b.URL = strings.TrimRight(b.URL, "/")
	return b
}

// Queue returns the queue name "<prefix>.<name>" for this test.
func (b *Broker) Queue(name string) string { return b.Prefix + "." + name }

// Group returns the consumer-group name "<prefix>.<name>" for this test.
func (b *Broker) Group(name string) string { return b.Prefix + "." + name }

// Namespace returns the KV namespace for this test (the prefix itself, which
// matches Queen's ^[a-z0-9][a-z0-9._-]{0,63}$).
func (b *Broker) Namespace() string { return b.Prefix }

// RequireMini returns the in-process fake, or skips t naming why it needs one
// (direct state access, the injected clock, fault injection) when the broker
// is real. This skip is never turned into a failure by GATE_TEST_REQUIRE_LIVE:
// a broker is present, the test just cannot steer it.
func (b *Broker) RequireMini(t testing.TB, why string) *miniqueen.Server {
	t.Helper()
	if b.Mini == nil {
		t.Skipf("gatetest: needs the in-process miniqueen (%s); the broker is %s at %s", why, b.Source, b.URL)
	}
	return b.Mini
}

// missing skips t with reason, or fails it when GATE_TEST_REQUIRE_LIVE is set.
func missing(t testing.TB, reason string) {
	t.Helper()
	refuse(t, unavailable(Inputs{RequireLive: RequireLive()}, reason))
}

// refuse ends t for an unavailable component: Fatalf for SourceFail, Skipf
// otherwise.
func refuse(t testing.TB, d Decision) {
	t.Helper()
	if d.Source == SourceFail {
		t.Fatalf("gatetest: missing live component: %s", d.Reason)
		return
	}
	t.Skipf("gatetest: missing live component: %s", d.Reason)
}
