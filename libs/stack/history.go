package stack

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/knob"
)

// LocalPostgres is the database the stack uses for history when PG_HOST
// and PG_URL are unset and it answers.
const LocalPostgres = "postgres://postgres@127.0.0.1:5432/postgres"

// decideHistory chooses the children's history: the PG_ knobs of the
// environment when set (the children inherit them; a database that does
// not answer then stops gate-api with its own one-line error), else the
// local PostgreSQL when it answers, else none. It returns the extra
// environment (nil = no history) and a sentence for people.
func decideHistory(ctx context.Context, off bool) ([]string, string) {
	if off {
		return nil, "running without history (NoHistory): no gate-recorder; Watch is refused, roll-ups, traces and samples are not kept"
	}
	k, err := knob.ReadHistory(os.Getenv)
	if err == nil && k.Enabled() {
		return []string{}, "history: using " + k.Describe() + " from the environment; gate-recorder runs"
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	db, err := history.OpenURL(pctx, LocalPostgres, knob.DefaultHistorySchema, history.Options{SkipMigrate: true, ConnectTimeout: 2 * time.Second, PoolSize: 1})
	if err != nil {
		return nil, "running WITHOUT history: PG_HOST is not set and no PostgreSQL answers on 127.0.0.1:5432 (" + strings.SplitN(err.Error(), ":", 2)[0] + "); Gate limits exactly as well, but Watch is refused and nothing is kept about yesterday. Set PG_HOST to run with history"
	}
	db.Close()
	return []string{"PG_HOST=127.0.0.1", "PG_PORT=5432", "PG_USER=postgres", "PG_DATABASE=postgres"},
		"history: the local PostgreSQL answers on 127.0.0.1:5432 (schema gate); gate-api keeps annotations and gate-recorder writes samples, roll-ups and traces"
}

// HistoryNote says whether the stack runs with history.
func (s *Stack) HistoryNote() string { return s.historyNote }

// startRecorder starts gate-recorder (after gate-api, which has migrated
// the schema) on a free port and waits for its /health.
func (s *Stack) startRecorder(ctx context.Context) error {
	bind, err := FreeAddr()
	if err != nil {
		return err
	}
	p := s.newProcess("gate-recorder", []string{s.bins["gate-recorder"]}, "http://"+dialable(bind), []string{"GATE_RECORDER_BIND=" + bind})
	p.Grace = drainGrace
	return s.launch(ctx, p, func(p *Process) { s.recorder = p }, "gate-recorder (history to PostgreSQL) health at "+p.HealthURL, slog.LevelInfo, "gate-recorder healthy")
}

// HistoryEnv is the history environment the stack gives its children (nil
// when it runs without history), for a process started beside the stack
// (the browser harness's viewer console) that should read the same history.
func (s *Stack) HistoryEnv() []string {
	if s.history == nil {
		return nil
	}
	return append([]string{}, s.history...)
}
