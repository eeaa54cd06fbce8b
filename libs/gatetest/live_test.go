package gatetest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/queen-mq/gate/libs/miniqueen"
)

func TestPostgresSchemasAreIsolatedBetweenTests(t *testing.T) {
	t.Parallel()
	a, b := NewPostgres(t), NewPostgres(t)
	if a.Schema == b.Schema {
		t.Fatalf("two tests got the same schema %q", a.Schema)
	}
	ctx := t.Context()
	for _, p := range []*Postgres{a, b} {
		var sp string
		if err := p.Pool.QueryRow(ctx, "SHOW search_path").Scan(&sp); err != nil {
			t.Fatalf("SHOW search_path: %v", err)
		}
		if sp != p.Schema {
			t.Fatalf("search_path = %q, want %q", sp, p.Schema)
		}
	}
	// The same unqualified table name in both schemas, with different rows.
	for i, p := range []*Postgres{a, b} {
		if _, err := p.Pool.Exec(ctx, "CREATE TABLE budget (n int)"); err != nil {
			t.Fatalf("CREATE TABLE in %s: %v", p.Schema, err)
		}
		if _, err := p.Pool.Exec(ctx, "INSERT INTO budget VALUES ($1)", i+1); err != nil {
			t.Fatalf("INSERT in %s: %v", p.Schema, err)
		}
	}
	for i, p := range []*Postgres{a, b} {
		var n, rows int
		if err := p.Pool.QueryRow(ctx, "SELECT max(n), count(*) FROM budget").Scan(&n, &rows); err != nil {
			t.Fatalf("SELECT in %s: %v", p.Schema, err)
		}
		if n != i+1 || rows != 1 {
			t.Errorf("schema %s sees n=%d rows=%d, want n=%d rows=1", p.Schema, n, rows, i+1)
		}
	}
	// A table only b created is invisible through a's search_path.
	if _, err := b.Pool.Exec(ctx, "CREATE TABLE only_b (x int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, "SELECT * FROM only_b"); err == nil {
		t.Error("schema a sees table only_b created in schema b")
	}
	// The URL alone (as a binary under test would use it) lands in the schema.
	conn, err := pgx.Connect(ctx, a.URL)
	if err != nil {
		t.Fatalf("connecting with the test URL: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, "SELECT n FROM budget").Scan(&n); err != nil || n != 1 {
		t.Errorf("through URL: n=%d err=%v, want n=1", n, err)
	}
}

func TestPostgresSchemaIsDroppedWhenTheTestEnds(t *testing.T) {
	t.Parallel()
	var schema, base string
	t.Run("owner", func(t *testing.T) {
		p := NewPostgres(t)
		schema, base = p.Schema, p.baseURL
		if _, err := p.Pool.Exec(t.Context(), "CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
	})
	if schema == "" {
		t.Skip("the owner subtest skipped: no PostgreSQL")
	}
	conn, err := pgx.Connect(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("schema %s still exists after its test ended", schema)
	}
}

func TestNATSPublishSubscribeUnderThePrefix(t *testing.T) {
	t.Parallel()
	a, b := NewNATS(t), NewNATS(t)
	if a.Prefix == b.Prefix {
		t.Fatalf("two tests got the same subject prefix %q", a.Prefix)
	}
	exerciseNATS(t, a, b)
}

func TestEmbeddedNATSServesPublishSubscribe(t *testing.T) {
	t.Parallel()
	url := startEmbeddedNATS(t)
	mk := func() *NATS {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatalf("connecting to embedded NATS: %v", err)
		}
		t.Cleanup(nc.Close)
		return &NATS{URL: url, Conn: nc, Prefix: "gt." + Prefix(t)[3:], Source: SourceEmbedded}
	}
	exerciseNATS(t, mk(), mk())
	js, err := mk().Conn.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(); err != nil {
		t.Errorf("embedded server has no JetStream: %v", err)
	}
}

// exerciseNATS checks that a's wildcard subscription under its prefix sees a's
// messages and none of b's.
func exerciseNATS(t *testing.T, a, b *NATS) {
	t.Helper()
	sub, err := a.Conn.SubscribeSync(a.Subject(">"))
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := a.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Conn.Publish(b.Subject("relay", "done"), []byte("not for a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Conn.Publish(a.Subject("relay", "done"), []byte("for a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no message under %s: %v", a.Prefix, err)
	}
	if string(msg.Data) != "for a" || msg.Subject != a.Prefix+".relay.done" {
		t.Errorf("got %q on %s, want %q on %s.relay.done", msg.Data, msg.Subject, "for a", a.Prefix)
	}
	if extra, err := sub.NextMsg(50 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("a's prefix received a second message %v (err %v)", extra, err)
	}
}

func TestBrokerAnswersHealthAndNamesArePrefixed(t *testing.T) {
	t.Parallel()
	b := NewBroker(t)
	if (b.Mini != nil) != (b.Source == SourceEmbedded) {
		t.Errorf("Mini set = %v but source is %s", b.Mini != nil, b.Source)
	}
	assertHealthy(t, b.URL)
	if got, want := b.Queue("in"), b.Prefix+".in"; got != want {
		t.Errorf("Queue = %q, want %q", got, want)
	}
	if b.Namespace() != b.Prefix {
		t.Errorf("Namespace = %q, want the prefix %q", b.Namespace(), b.Prefix)
	}
	if other := NewBroker(t); other.Prefix == b.Prefix {
		t.Errorf("two brokers for one test share the prefix %q", b.Prefix)
	}
}

func TestMiniqueenFallbackAnswersHealth(t *testing.T) {
	t.Parallel()
	m := miniqueen.RunT(t)
	assertHealthy(t, m.URL())
	b := &Broker{URL: m.URL(), Mini: m, Source: SourceEmbedded}
	if got := b.RequireMini(t, "clock control"); got != m {
		t.Errorf("RequireMini returned %p, want the embedded server %p", got, m)
	}
}

func TestRequireMiniSkipsOnARealBroker(t *testing.T) {
	t.Parallel()
	var skipped bool
	t.Run("real", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		b := &Broker{URL: "http://queen.example:6632", Source: SourceEnv}
		b.RequireMini(t, "clock control")
		t.Error("RequireMini returned on a real broker")
	})
	if !skipped {
		t.Error("RequireMini did not skip on a real broker")
	}
}

func assertHealthy(t *testing.T, url string) {
	t.Helper()
	EventuallyErr(t, 5*time.Second, func() error {
		return probeQueen(t.Context(), url)
	})
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/health = %d, want 200", url, resp.StatusCode)
	}
}
