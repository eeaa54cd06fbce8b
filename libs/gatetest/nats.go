package gatetest

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// NATS is a NATS connection and a subject prefix of one's own for one test.
type NATS struct {
	// URL is the server's URL, e.g. "nats://127.0.0.1:4222".
	URL string
	// Conn is connected to URL and closed when the test ends.
	Conn *nats.Conn
	// Prefix is this test's first subject token(s), "gt.<name>-<random>";
	// Subject builds subjects under it.
	Prefix string
	// Source says where the server came from (env, local or embedded). Only an
	// embedded server is guaranteed to have JetStream.
	Source Source
}

// NewNATS returns a connection for t to the NATS server chosen as the package
// documentation describes. An embedded server is shut down when t ends.
func NewNATS(t testing.TB) *NATS {
	t.Helper()
	d := Decide(ComponentNATS, inputsFor(ComponentNATS))
	n := &NATS{URL: d.URL, Source: d.Source, Prefix: "gt." + strings.TrimPrefix(Prefix(t), "gt-")}
	switch d.Source {
	case SourceEnv, SourceLocal:
	case SourceEmbedded:
		n.URL = startEmbeddedNATS(t)
	default:
		refuse(t, d)
	}
	nc, err := nats.Connect(n.URL, nats.Name(t.Name()), nats.Timeout(probeTimeout))
	if err != nil {
		t.Fatalf("gatetest: connecting to NATS at %s (%s): %v", n.URL, d.Source, err)
	}
	t.Cleanup(nc.Close)
	n.Conn = nc
	return n
}

// Subject returns "<prefix>.<parts joined by dots>".
func (n *NATS) Subject(parts ...string) string {
	return strings.Join(append([]string{n.Prefix}, parts...), ".")
}

// startEmbeddedNATS runs a nats-server with JetStream on a random loopback
// port for the life of t and returns its URL.
func startEmbeddedNATS(t testing.TB) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoSigs:    true,
		NoLog:     true,
	})
	if err != nil {
		t.Fatalf("gatetest: configuring embedded nats-server: %v", err)
	}
	ns.Start()
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatalf("gatetest: embedded nats-server not ready within 10s")
	}
	return ns.ClientURL()
}
