package history

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/migrations"
)

// Defaults of Options.
const (
	// DefaultPoolSize is the pool of one process (gate-runtime §5.5: 4).
	DefaultPoolSize = 4
	// DefaultConnectTimeout bounds the boot-time connect and ping.
	DefaultConnectTimeout = 10 * time.Second
	// MigrationTable is goose's version table, inside the schema.
	MigrationTable = "gate_migrations"
)

// Options tune Open. The zero value is the defaults: a pool of 4, a 10 s
// connect timeout, migrations applied, logs to slog.Default().
type Options struct {
	// PoolSize is the pool's maximum connections.
	PoolSize int
	// ConnectTimeout bounds connecting, pinging and migrating at boot.
	ConnectTimeout time.Duration
	// SkipMigrate opens without applying migrations (a reader that does
	// not own the schema).
	SkipMigrate bool
	// Logger receives one line per applied migration.
	Logger *slog.Logger
	// Clock is what partitions are created ahead of at open (nil is the
	// wall clock).
	Clock clock.Clock
}

// WithDefaults returns o with its zero fields filled (a negative pool
// size or timeout counts as zero).
func (o Options) WithDefaults() Options {
	o.PoolSize = cmp.Or(max(o.PoolSize, 0), DefaultPoolSize)
	o.ConnectTimeout = cmp.Or(max(o.ConnectTimeout, 0), DefaultConnectTimeout)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	o.Clock = clock.Or(o.Clock)
	return o
}

// DB is an open history database: a pgx pool whose connections use the
// history schema.
type DB struct {
	pool   *pgxpool.Pool
	schema string
	parts  partitionCache
}

// ErrUnreachable wraps every failure to connect or prepare the schema at
// boot; its message names the knob to fix.
var ErrUnreachable = errors.New("history database unreachable")

// BootError is a configured database that could not be opened: one line
// naming the knob, the cause and the fix.
type BootError struct {
	// Knob is PG_HOST or PG_URL.
	Knob string
	// Where is the connection without its password.
	Where string
	// Step is what failed (connecting, creating the schema, migrating).
	Step string
	// Err is the cause.
	Err error
}

func (e *BootError) Error() string {
	return fmt.Sprintf("history: PostgreSQL at %s failed while %s: %v; start the database or fix %s (unset PG_HOST and PG_URL to run without history)",
		e.Where, e.Step, oneLine(e.Err), e.Knob)
}

// Unwrap lets errors.Is(err, ErrUnreachable) and the cause match.
func (e *BootError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Open connects to the database the knobs describe, creates the schema if
// absent and applies the migrations. It returns (nil, nil) when history is
// not configured, and a *BootError (one line, naming the knob) when it is
// configured but cannot be opened.
func Open(ctx context.Context, k knob.History, o Options) (*DB, error) {
	if !k.Enabled() {
		return nil, nil
	}
	schema := k.Schema
	if schema == "" {
		schema = knob.DefaultHistorySchema
	}
	db, step, err := open(ctx, k.ConnString(), schema, o.WithDefaults())
	if err != nil {
		return nil, &BootError{Knob: k.Knob(), Where: k.Describe(), Step: step, Err: err}
	}
	return db, nil
}

// OpenURL is Open for a connection string and schema (tests, tools).
func OpenURL(ctx context.Context, conn, schema string, o Options) (*DB, error) {
	db, step, err := open(ctx, conn, schema, o.WithDefaults())
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", step, err)
	}
	return db, nil
}

func open(ctx context.Context, conn, schema string, o Options) (*DB, string, error) {
	if err := knob.HistorySchema.Validate(schema); err != nil {
		return nil, "checking the schema name", err
	}
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		return nil, "parsing the connection string", err
	}
	cfg.MaxConns = int32(o.PoolSize)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "gate"
	cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(cctx, cfg)
	if err != nil {
		return nil, "connecting", err
	}
	if err := pool.Ping(cctx); err != nil {
		pool.Close()
		return nil, "connecting", err
	}
	db := &DB{pool: pool, schema: schema}
	if !o.SkipMigrate {
		if step, err := db.migrate(cctx, o.Logger); err != nil {
			pool.Close()
			return nil, step, err
		}
		if err := db.EnsurePartitions(cctx, o.Clock.Now(), PartitionsAhead); err != nil {
			pool.Close()
			return nil, "creating the day partitions of watch_samples", err
		}
	}
	return db, "", nil
}

// migrate creates the schema and applies every pending migration under a
// PostgreSQL session (advisory) lock keyed by the schema, so two binaries
// booting at once apply each migration exactly once.
func (db *DB) migrate(ctx context.Context, log *slog.Logger) (string, error) {
	if _, err := db.pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+db.schema); err != nil {
		// Two processes creating the schema at once: one loses the race
		// on the catalogue's unique index; the schema exists either way.
		if !isDuplicate(err) {
			return "creating schema " + db.schema, err
		}
	}
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	defer sqlDB.Close()
	n, err := Migrate(ctx, sqlDB, db.schema)
	if err != nil {
		return "migrating schema " + db.schema, err
	}
	if n > 0 {
		log.Info("history: migrations applied", "schema", db.schema, "applied", n)
	}
	return "", nil
}

// Migrate applies the embedded migrations to schema through sqlDB (whose
// search_path must be schema) under a session lock, returning how many it
// applied (0 at a boot after the first).
func Migrate(ctx context.Context, sqlDB *sql.DB, schema string) (int, error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(schema)), lock.WithLockTimeout(1, 120))
	if err != nil {
		return 0, err
	}
	// Out of order: migrations are numbered when their work starts and
	// merged when it ends, so a database may have applied a later one
	// (00005, 00006) before an earlier one (00004) was merged; each creates
	// its own tables, and a missing one is applied rather than refused.
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithTableName(schema+"."+MigrationTable),
		goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true))
	if err != nil {
		return 0, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return 0, err
	}
	return len(res), nil
}

// lockID is the advisory lock of one schema's migrations: schemas migrate
// independently, two processes on one schema take turns.
func lockID(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("gate-migrations\x00" + schema))
	return int64(h.Sum64() & 0x7fffffffffffffff)
}

// Close closes the pool.
func (db *DB) Close() {
	if db != nil && db.pool != nil {
		db.pool.Close()
	}
}

// Pool is the underlying pool (its connections use the schema).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Schema is the history schema.
func (db *DB) Schema() string { return db.schema }

// Ping checks the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }
