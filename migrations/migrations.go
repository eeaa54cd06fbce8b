// Package migrations holds Gate's PostgreSQL schema as goose/v3 SQL
// migrations, embedded so every binary that owns the schema (gate-recorder,
// gate-api, gate-console) carries the same files. They are applied by
// libs/history through a goose Provider under a session lock, inside the
// schema the connection's search_path names (`gate` by default): table
// names here are unqualified on purpose.
package migrations

import "embed"

// FS is the migration files, at its root, named NNNNN_what.sql.
//
//go:embed *.sql
var FS embed.FS
