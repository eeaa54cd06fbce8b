package history_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/knob"
)

// open gives t a migrated history database in its own schema, with the
// clock at now.
func open(t *testing.T, now time.Time) (*history.DB, *gatetest.Postgres) {
	t.Helper()
	pg := gatetest.NewPostgres(t)
	db, err := history.OpenURL(t.Context(), pg.URL, pg.Schema, history.Options{Clock: clock.NewVirtual(now)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, pg
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// From an empty schema every table exists after the first boot, and the
// next boot applies nothing.
func TestMigrateFromEmptyThenNoOp(t *testing.T) {
	t.Parallel()
	db, pg := open(t, t0)
	var tables []string
	rows, err := db.Pool().Query(t.Context(), `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename NOT LIKE 'watch_samples_d%' ORDER BY tablename`, pg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config_events", "gate_migrations", "graph_versions", "rollup_hours", "rollup_seals", "rollup_sources", "rollups", "shadow_key_samples", "shadow_minutes", "shadow_state", "snapshots", "traces", "vendor_meter", "watch_recorders", "watch_samples", "watch_series", "watch_series_seals"}
	if !reflect.DeepEqual(tables, want) {
		t.Fatalf("tables after the first boot %v, want %v", tables, want)
	}
	before := migrationRows(t, db)
	again, err := history.OpenURL(t.Context(), pg.URL, pg.Schema, history.Options{Clock: clock.NewVirtual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if after := migrationRows(t, db); after != before {
		t.Fatalf("the second boot changed the migration table: %d rows, then %d", before, after)
	}
}

// A database that applied later migrations before an earlier one was
// merged (00005 and 00006 before 00004) boots: the missing one is applied.
func TestMigrateAppliesAMissingEarlierMigration(t *testing.T) {
	t.Parallel()
	db, pg := open(t, t0)
	if _, err := db.Pool().Exec(t.Context(), "DROP TABLE watch_series, watch_series_seals; DELETE FROM "+history.MigrationTable+" WHERE version_id = 4"); err != nil {
		t.Fatal(err)
	}
	again, err := history.OpenURL(t.Context(), pg.URL, pg.Schema, history.Options{Clock: clock.NewVirtual(t0)})
	if err != nil {
		t.Fatalf("a boot with 00004 missing and 00006 applied: %v", err)
	}
	again.Close()
	var n int
	if err := db.Pool().QueryRow(t.Context(), "SELECT count(*) FROM watch_series_seals").Scan(&n); err != nil {
		t.Fatalf("00004 was not applied: %v", err)
	}
}

func migrationRows(t *testing.T, db *history.DB) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(t.Context(), "SELECT count(*) FROM "+history.MigrationTable).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Four processes (sessions of their own) booting on one empty schema at
// once: every one succeeds and each migration is applied exactly once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	pg := gatetest.NewPostgres(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			db, err := history.OpenURL(t.Context(), pg.URL, pg.Schema, history.Options{Clock: clock.NewVirtual(t0)})
			if err == nil {
				db.Close()
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
	}
	var applied, distinct int
	if err := pg.Pool.QueryRow(t.Context(), "SELECT count(*), count(DISTINCT version_id) FROM "+history.MigrationTable+" WHERE version_id > 0").Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied != distinct || applied == 0 {
		t.Fatalf("migration table holds %d applied rows for %d versions: a migration ran twice", applied, distinct)
	}
}

// A configured database that does not answer is one line naming the knob.
func TestOpenUnreachableNamesTheKnob(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	k := knob.History{Host: "127.0.0.1", Port: port, User: "postgres", Database: "postgres", Schema: "gate"}
	_, err = history.Open(t.Context(), k, history.Options{ConnectTimeout: 2 * time.Second})
	var be *history.BootError
	if !errors.As(err, &be) || !errors.Is(err, history.ErrUnreachable) {
		t.Fatalf("error %v, want a BootError", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "PG_HOST") || !strings.Contains(msg, fmt.Sprint(port)) {
		t.Fatalf("boot error %q: want one line naming PG_HOST and the port", msg)
	}
	k.URL = fmt.Sprintf("postgres://postgres:hunter2@127.0.0.1:%d/postgres", port)
	_, err = history.Open(t.Context(), k, history.Options{ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "PG_URL") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("PG_URL boot error %v: want it named, password hidden", err)
	}
	if db, err := history.Open(t.Context(), knob.History{}, history.Options{}); db != nil || err != nil {
		t.Fatalf("no PG_HOST: got %v %v, want no database and no error", db, err)
	}
}

func sampleBatch(rec string, sec int64) history.Batch {
	return history.Batch{
		Samples: []history.Sample{
			{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: rec, Second: sec, Items: 3, Cost: 6},
			{App: "a", Graph: "g", Node: "n", Path: "q", Session: 5, Recorder: rec, Second: sec, Items: 1, Cost: 2},
			{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: rec, Second: sec + 1000, Items: 4, Cost: 8},
		},
		Recorders: []history.Recorder{{ID: rec, App: "a", Graph: "g", Node: "n", Session: 5, Started: sec - 5000, Through: sec + 2000, Lost: 2}},
		Rollups: []history.RollupCount{
			{Recorder: rec, App: "a", Target: "g.n", Lane: "p", Minute: sec - sec%60000, Admitted: 7, Denied: 1, Cost: 14},
			{Recorder: rec, App: "a", Target: "g.n", Lane: "q", Minute: sec - sec%60000, Admitted: 1, Cost: 2},
		},
		Traces: []history.Trace{{Ref: rec + ":1", At: sec, App: "a", Target: "g.n", Lane: "p", Outcome: "denied", BudgetID: "b0"}},
	}
}

// dump renders every history row of the schema, for equality.
func dump(t *testing.T, db *history.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT application, graph, node, path, session, recorder, second, items, cost FROM watch_samples ORDER BY recorder, path, second",
		"SELECT recorder, application, graph, node, session, started, through, lost FROM watch_recorders ORDER BY recorder",
		"SELECT application, target, lane, minute, admitted, denied, cost_est FROM rollups ORDER BY 1, 2, 3, 4",
		"SELECT ref, at, application, target, lane, outcome, budget_id FROM traces ORDER BY ref",
	} {
		rows, err := db.Pool().Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, v...)
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

// The same handover written three times leaves the same rows.
func TestWriteReplayIsIdempotent(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	sec := t0.UnixMilli()
	b := sampleBatch("r1", sec)
	if err := db.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	first := dump(t, db)
	for range 2 {
		if err := db.Write(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	if again := dump(t, db); again != first {
		t.Fatalf("replaying changed the rows:\nfirst:\n%s\nafter three writes:\n%s", first, again)
	}
	rows, err := db.Rollups(t.Context(), "a", "g.n", sec-60000, sec+60000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Admitted+rows[1].Admitted != 8 || rows[0].Denied+rows[1].Denied != 1 {
		t.Fatalf("rollups %+v, want p 7 admitted 1 denied and q 1 admitted", rows)
	}
	tr, err := db.Traces(t.Context(), "denied", 10)
	if err != nil || len(tr) != 1 || tr[0].BudgetID != "b0" {
		t.Fatalf("traces %+v %v, want the one denial", tr, err)
	}
}

// Two sources of one stage and minute add up; a source's growing total
// adds only its growth.
func TestRollupsSumAcrossSources(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	m := t0.UnixMilli()
	w := func(rec string, admitted, denied int64, cost float64) {
		t.Helper()
		if err := db.Write(t.Context(), history.Batch{Rollups: []history.RollupCount{{Recorder: rec, App: "a", Target: "g.n", Lane: "p", Minute: m, Admitted: admitted, Denied: denied, Cost: cost}}}); err != nil {
			t.Fatal(err)
		}
	}
	w("replica-1", 10, 2, 20)
	w("replica-2", 5, 0, 10)
	w("replica-1", 12, 3, 24) // replica 1's minute grew by 2 admitted, 1 denied
	w("replica-2", 5, 0, 10)  // a replay
	rows, err := db.Rollups(t.Context(), "a", "g.n", m, m+60000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Admitted != 17 || rows[0].Denied != 3 || rows[0].CostEstimated != 34 {
		t.Fatalf("rollups %+v, want admitted 17 denied 3 cost 34", rows)
	}
}

// Watch traffic over complete minutes: totals, the peak minute, recorded
// minutes, summed over paths.
func TestWatchTraffic(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	m := t0.UnixMilli()
	var rc []history.RollupCount
	for i, items := range []int64{60, 0, 120} {
		if items == 0 {
			continue
		}
		rc = append(rc, history.RollupCount{Recorder: "r", App: "a", Target: "g.n", Lane: "p", Minute: m + int64(i)*60000, Admitted: items, Cost: float64(items * 2)})
		rc = append(rc, history.RollupCount{Recorder: "r", App: "a", Target: "g.n", Lane: "q", Minute: m + int64(i)*60000, Admitted: 1, Cost: 1})
	}
	// A minute outside the range.
	rc = append(rc, history.RollupCount{Recorder: "r", App: "a", Target: "g.n", Lane: "p", Minute: m + 3*60000, Admitted: 1000, Cost: 1000})
	if err := db.Write(t.Context(), history.Batch{Rollups: rc}); err != nil {
		t.Fatal(err)
	}
	got, err := db.WatchTraffic(t.Context(), "a", []string{"g.n", "g.other"}, m, m+3*60000)
	if err != nil {
		t.Fatal(err)
	}
	want := history.NodeTraffic{Target: "g.n", Admitted: 182, Cost: 362, PeakMinuteCost: 241, RecordedMinutes: 2}
	if len(got) != 1 || got["g.n"] != want {
		t.Fatalf("watch traffic %+v, want only %+v", got, want)
	}
}

// Thirty-two days fast-forwarded: partitions exist ahead of every day
// written, the expired days are dropped (not deleted row by row), roll-ups
// survive to 90 days and traces to 7.
func TestRetentionFastForward(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	ctx := t.Context()
	day0 := history.DayStart(t0.UnixMilli())
	for d := range 33 {
		now := t0.Add(time.Duration(d) * 24 * time.Hour)
		if _, err := db.Prune(ctx, now); err != nil {
			t.Fatalf("day %d: %v", d, err)
		}
		b := sampleBatch(fmt.Sprintf("r%d", d), now.UnixMilli())
		if err := db.Write(ctx, b); err != nil {
			t.Fatalf("day %d: %v", d, err)
		}
		parts, err := db.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		today := history.DayStart(now.UnixMilli())
		if parts[len(parts)-1] < today+history.PartitionsAhead*24*3600*1000 {
			t.Fatalf("day %d: the newest partition starts %s, want %d days ahead of %s", d, time.UnixMilli(parts[len(parts)-1]).UTC(), history.PartitionsAhead, time.UnixMilli(today).UTC())
		}
	}
	parts, err := db.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// At day 32 10:00 the cut is day 1 10:00: day 0 is wholly expired and
	// dropped, day 1 still holds a sample exactly 31 days old.
	if parts[0] != day0+24*3600*1000 {
		t.Fatalf("after 32 days the oldest partition is %s, want day 1 (%s): day 0 is past 31 days", time.UnixMilli(parts[0]).UTC(), time.UnixMilli(day0+86400000).UTC())
	}
	var oldSamples int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM watch_samples WHERE second < $1", day0+86400000).Scan(&oldSamples); err != nil {
		t.Fatal(err)
	}
	if oldSamples != 0 {
		t.Fatalf("%d expired samples remain", oldSamples)
	}
	rollups, err := db.Rollups(ctx, "a", "g.n", 0, t0.Add(24*time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if len(rollups) != 2 {
		t.Fatalf("day-0 rollups after 32 days: %d rows, want 2 (kept 90 days)", len(rollups))
	}
	tr, err := db.Traces(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tr {
		if x.At < t0.Add(32*24*time.Hour-history.TraceRetention).UnixMilli() {
			t.Fatalf("trace at %s survived past 7 days", time.UnixMilli(x.At).UTC())
		}
	}
	recs, err := db.Recorders(ctx, "a", "g", "n", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 32 {
		t.Fatalf("%d recorders after 32 days, want the 32 of days 1..32 (day 0's is past 31 days)", len(recs))
	}
	// Day 91: the day-0 roll-ups are gone.
	if _, err := db.Prune(ctx, t0.Add(91*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	rollups, err = db.Rollups(ctx, "a", "g.n", 0, t0.Add(24*time.Hour).UnixMilli())
	if err != nil || len(rollups) != 0 {
		t.Fatalf("day-0 rollups after 91 days: %v %v, want none", rollups, err)
	}
}

// Snapshots keep the newest per minute; annotations read newest first.
func TestSnapshotsAndAnnotations(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	ctx := context.Background()
	m := t0.UnixMilli()
	put := func(at int64, body string) {
		t.Helper()
		if err := db.PutSnapshots(ctx, []history.Snapshot{{App: "a", Graph: "g", Node: "n", Minute: m, At: at, Body: []byte(body)}}); err != nil {
			t.Fatal(err)
		}
	}
	put(m+10, `{"before": 1}`)
	put(m+30, `{"before": 3}`)
	put(m+20, `{"before": 2}`) // older than the stored one: ignored
	snaps, err := db.Snapshots(ctx, "a", "g", m)
	if err != nil || len(snaps) != 1 || snaps[0].At != m+30 || !strings.Contains(string(snaps[0].Body), "3") {
		t.Fatalf("snapshots %+v %v, want the one at +30", snaps, err)
	}
	for i, c := range []history.Change{
		history.Annotation(false, false, true, 1),
		history.Annotation(true, true, false, 2),
		history.Annotation(true, false, false, 3),
	} {
		if err := db.AddConfigEvent(ctx, history.ConfigEvent{App: "a", Graph: "g", At: m + int64(i), Change: c}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := db.ConfigEvents(ctx, "a", "g", 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, e := range ev {
		labels = append(labels, fmt.Sprintf("%s v%d %s", e.Change.Label, e.Change.Version, e.Change.Mode))
	}
	want := []string{"Configuration updated v3 enforce", "Limits activated v2 enforce", "Created v1 watch"}
	if !reflect.DeepEqual(labels, want) {
		t.Fatalf("annotations %v, want %v", labels, want)
	}
	if c := history.Annotation(true, false, true, 4); c.Label != history.LabelWatchStarted {
		t.Fatalf("enforce → watch labelled %q", c.Label)
	}
}

// Samples sum per second over recorders and paths, and say when the cost
// per item is not uniform.
func TestSamplesPerSecond(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	sec := t0.UnixMilli()
	if err := db.Write(t.Context(), sampleBatch("r1", sec)); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(t.Context(), sampleBatch("r2", sec)); err != nil {
		t.Fatal(err)
	}
	got, err := db.Samples(t.Context(), "a", "g", "n", "", 5, sec, sec+2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Items != 8 || got[0].Cost != 16 || got[1].Items != 8 || !got[0].Uniform {
		t.Fatalf("samples %+v, want 8 items cost 16 in each second, uniform", got)
	}
	rows, err := db.SampleRows(t.Context(), "a", "g", "n", 5, sec, sec+2000)
	if err != nil || len(rows) != 6 {
		t.Fatalf("sample rows %d %v, want 6", len(rows), err)
	}
}

// Sealing hours changes no summary: the same range reads the same totals,
// peak and minutes from sealed hours as from the minutes, also for a
// range that starts and ends inside an hour.
func TestSealedHoursSummaryUnchanged(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	ctx := t.Context()
	start := t0.UnixMilli() // 10:00
	var rc []history.RollupCount
	for m := int64(0); m < 5*60; m++ {
		if m%7 == 3 {
			continue // idle minutes
		}
		for _, lane := range []string{"p", "q"} {
			rc = append(rc, history.RollupCount{Recorder: "r", App: "a", Target: "g.n", Lane: lane, Minute: start + m*60000, Admitted: m%11 + 1, Cost: float64((m%13 + 1) * 3)})
		}
	}
	if err := db.Write(ctx, history.Batch{Rollups: rc}); err != nil {
		t.Fatal(err)
	}
	ranges := [][2]int64{{start, start + 5*3600000}, {start + 17*60000, start + 4*3600000 + 5*60000}, {start + 60*60000, start + 120*60000}}
	var before []history.NodeTraffic
	for _, r := range ranges {
		got, err := db.WatchTraffic(ctx, "a", []string{"g.n"}, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, got["g.n"])
	}
	n, err := db.SealHours(ctx, t0.Add(5*time.Hour+history.SealAfter))
	if err != nil || n != 5 {
		t.Fatalf("sealed %d hours (%v), want the 5 written", n, err)
	}
	if again, _ := db.SealHours(ctx, t0.Add(5*time.Hour+history.SealAfter)); again != 0 {
		t.Fatalf("a second pass sealed %d more hours", again)
	}
	for i, r := range ranges {
		got, err := db.WatchTraffic(ctx, "a", []string{"g.n"}, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		if got["g.n"] != before[i] {
			t.Fatalf("range %d: sealed %+v, from minutes %+v", i, got["g.n"], before[i])
		}
	}
}
