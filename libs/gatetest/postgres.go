package gatetest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is a PostgreSQL schema of one's own for one test.
type Postgres struct {
	// URL connects with search_path set to Schema, so unqualified names land in
	// the test's schema (pgx passes search_path as a runtime parameter).
	URL string
	// Pool is an open pool on URL; it is closed when the test ends.
	Pool *pgxpool.Pool
	// Schema is the test's schema, created empty and dropped (CASCADE) when the
	// test ends.
	Schema string
	// Source says where the server came from (env, local or container).
	Source Source
	// baseURL is the server URL without the schema, used to drop it.
	baseURL string
}

// NewPostgres returns a fresh schema for t on the PostgreSQL server chosen as
// the package documentation describes, skipping or failing t when none is
// available.
func NewPostgres(t testing.TB) *Postgres {
	t.Helper()
	d := Decide(ComponentPostgres, inputsFor(ComponentPostgres))
	base := d.URL
	switch d.Source {
	case SourceEnv, SourceLocal:
	case SourceContainer:
		u, err := postgresContainer.get(startPostgresContainer)
		if err != nil {
			missing(t, "postgres: "+err.Error()+"; set "+EnvPostgresURL+" or run PostgreSQL on 127.0.0.1:5432")
		}
		base = u
	default:
		refuse(t, d)
	}
	p, err := openSchema(t.Context(), base, schemaName(t))
	if err != nil {
		t.Fatalf("gatetest: postgres at %s (%s): %v", redact(base), d.Source, err)
	}
	p.Source = d.Source
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.drop(ctx); err != nil {
			t.Errorf("gatetest: dropping schema %s: %v", p.Schema, err)
		}
	})
	return p
}

// openSchema creates schema on the server at base and opens a pool whose
// connections use it.
func openSchema(ctx context.Context, base, schema string) (*Postgres, error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	p := &Postgres{URL: withSearchPath(base, schema), Schema: schema, baseURL: base}
	p.Pool, err = pgxpool.New(ctx, p.URL)
	if err != nil {
		_ = p.drop(ctx)
		return nil, fmt.Errorf("opening a pool on schema %s: %w", schema, err)
	}
	return p, nil
}

// drop closes the pool and drops the schema with everything in it.
func (p *Postgres) drop(ctx context.Context) error {
	if p.Pool != nil {
		p.Pool.Close()
	}
	conn, err := pgx.Connect(ctx, p.baseURL)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+p.Schema+" CASCADE"); err != nil {
		return fmt.Errorf("DROP SCHEMA: %w", err)
	}
	return nil
}

// withSearchPath adds search_path=schema to a postgres:// URL or a
// keyword/value connection string.
func withSearchPath(base, schema string) string {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		if u, err := url.Parse(base); err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return strings.TrimSpace(base) + " search_path=" + schema
}

// redact hides a password in a postgres:// URL for messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
