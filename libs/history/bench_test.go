package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/history"
)

// Recorder shape of the figures: 20 stages (one path per node) × 3 relay
// replicas.
const (
	benchNodes    = 20
	benchReplicas = 3
)

func benchDB(b *testing.B, now time.Time) *history.DB {
	b.Helper()
	pg := gatetest.NewPostgres(b)
	db, err := history.OpenURL(b.Context(), pg.URL, pg.Schema, history.Options{Clock: clock.NewVirtual(now)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	return db
}

// flushBatch is one 10 s handover of 20 stages × 3 replicas: 10 seconds of
// samples, the minute's running totals and the recorder rows.
func flushBatch(from int64, session int64) history.Batch {
	var bt history.Batch
	for r := range benchReplicas {
		for n := range benchNodes {
			rec := fmt.Sprintf("rec-%d-%d", r, n)
			node := fmt.Sprintf("n%02d", n)
			for s := int64(0); s < 10; s++ {
				bt.Samples = append(bt.Samples, history.Sample{App: "bench", Graph: "g", Node: node, Path: "p" + node, Session: session,
					Recorder: rec, Second: from + s*1000, Items: 7, Cost: 14})
			}
			minute := from - from%60000
			done := (from-minute)/1000 + 10
			bt.Rollups = append(bt.Rollups, history.RollupCount{Recorder: rec, App: "bench", Target: "g." + node, Lane: "p" + node,
				Minute: minute, Admitted: 7 * done, Cost: float64(14 * done)})
			bt.Recorders = append(bt.Recorders, history.Recorder{ID: rec, App: "bench", Graph: "g", Node: node, Session: session,
				Started: session, Through: from + 10000})
		}
	}
	return bt
}

// BenchmarkFlush10s is the time to commit one 10 s handover batch of 20
// stages × 3 replicas (600 samples, 60 minute totals, 60 recorder rows).
func BenchmarkFlush10s(b *testing.B) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	db := benchDB(b, now)
	start := now.UnixMilli()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.Write(b.Context(), flushBatch(start+int64(i)*10000, start)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHourOfSamples writes one hour of samples for 20 stages × 3
// replicas in 10 s batches (360 batches, 216,000 sample rows), then reads
// every node's hour back and checks it; it reports the mean flush and the
// per-node query time.
func BenchmarkHourOfSamples(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		db := benchDB(b, now)
		start := now.UnixMilli()
		b.StartTimer()
		t0 := time.Now()
		for f := int64(0); f < 360; f++ {
			if err := db.Write(b.Context(), flushBatch(start+f*10000, start)); err != nil {
				b.Fatal(err)
			}
		}
		write := time.Since(t0)
		t1 := time.Now()
		for n := range benchNodes {
			secs, err := db.Samples(b.Context(), "bench", "g", fmt.Sprintf("n%02d", n), "", start, start, start+3600_000)
			if err != nil {
				b.Fatal(err)
			}
			if len(secs) != 3600 || secs[0].Items != 7*benchReplicas {
				b.Fatalf("node %d: %d seconds, first %+v; want 3600 of %d items", n, len(secs), secs[0], 7*benchReplicas)
			}
		}
		read := time.Since(t1)
		b.ReportMetric(float64(write.Milliseconds())/360, "ms/flush")
		b.ReportMetric(float64(read.Milliseconds())/benchNodes, "ms/node-hour-read")
	}
}

// BenchmarkWatchSummary30Days is the summary query of a 30-day Watch of 20
// nodes: 30 × 1440 minute roll-ups per node (864,000 rows), every minute
// present.
func BenchmarkWatchSummary30Days(b *testing.B) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	db := benchDB(b, now)
	start := now.UnixMilli()
	_, err := db.Pool().Exec(b.Context(), `INSERT INTO rollups (application, target, lane, minute, admitted, denied, cost_est)
		SELECT 'bench', 'g.n' || lpad(n::text, 2, '0'), 'p', $1::bigint + m::bigint * 60000, 420, 0, 840
		FROM generate_series(0, 19) n, generate_series(0, 30 * 1440 - 1) m`, start)
	if err != nil {
		b.Fatal(err)
	}
	// gate-recorder's hourly pass seals every hour older than SealAfter.
	if n, err := db.SealHours(b.Context(), time.UnixMilli(start+30*86400_000).Add(history.SealAfter)); err != nil || n != 30*24 {
		b.Fatalf("sealed %d hours (%v), want 720", n, err)
	}
	if _, err := db.Pool().Exec(b.Context(), "VACUUM ANALYZE rollups, rollup_hours, rollup_seals"); err != nil {
		b.Fatal(err)
	}
	nodes := make([]string, benchNodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("n%02d", i)
	}
	end := start + 30*86400_000
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sum, err := db.WatchSummary(b.Context(), "bench", "g", nodes, start, 30*86400, end)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Minutes != 30*1440 || sum.Nodes[0].Traffic.Admitted != 420*30*1440 || sum.Nodes[19].Traffic.RecordedMinutes != 30*1440 {
			b.Fatalf("summary %+v", sum.Nodes[0])
		}
	}
}

// dayOfPathSamples fills 24 h of per-second samples for 20 paths over 10
// entry nodes (two paths each, one recorder per node): 1.7 M rows, the
// recording a whole-graph simulation of the 20-node candidate reads.
func dayOfPathSamples(b *testing.B, db *history.DB, start int64) {
	b.Helper()
	if err := db.EnsurePartitions(b.Context(), time.UnixMilli(start), 2); err != nil {
		b.Fatal(err)
	}
	_, err := db.Pool().Exec(b.Context(), `INSERT INTO watch_samples (application, graph, node, path, session, recorder, second, items, cost)
		SELECT 'bench', 'g', 'entry-' || lpad((p % 10)::text, 2, '0'), 'path-' || lpad(p::text, 2, '0'), $1::bigint,
			'rec-' || (p % 10)::text, $1::bigint + s::bigint * 1000, 1 + (s * 7 + p) % 40, 2 * (1 + (s * 7 + p) % 40)
		FROM generate_series(0, 19) p, generate_series(0, 86399) s`, start)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool().Exec(b.Context(), "VACUUM ANALYZE watch_samples"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGraphDayRead is the history read of a whole-graph simulation
// over 24 h: every path's per-second arrivals at its entry node (20 paths,
// 1.7 M sample rows), the read the POST …/simulate route makes — from the
// samples (raw) and with every hour sealed (sealed), as gate-recorder's
// hourly pass leaves all but the last SealAfter.
func BenchmarkGraphDayRead(b *testing.B) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	db := benchDB(b, now)
	start := now.UnixMilli()
	dayOfPathSamples(b, db, start)
	read := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var rows int
			for p := range 20 {
				secs, err := db.PathSeconds(b.Context(), "bench", "g", fmt.Sprintf("entry-%02d", p%10), fmt.Sprintf("path-%02d", p), start, start, start+86400_000)
				if err != nil {
					b.Fatal(err)
				}
				rows += len(secs)
			}
			if rows != 20*86400 {
				b.Fatalf("read %d seconds, want %d", rows, 20*86400)
			}
		}
	}
	b.Run("raw", read)
	if n, err := db.SealSeries(b.Context(), now.Add(24*time.Hour+history.SealAfter)); err != nil || n != 24 {
		b.Fatalf("sealed %d hours (%v), want 24", n, err)
	}
	b.Run("sealed", read)
}

// BenchmarkKeySamples is what a keyed shadow candidate's recording costs
// PostgreSQL: one 10 s flush of one stage's per-value counts at 1, 100 or
// 10,000 distinct values a second (one row per value and second), written
// through Write as gate-recorder does, and the bytes the table and its
// indexes hold per row afterwards.
func BenchmarkKeySamples(b *testing.B) {
	for _, values := range []int{1, 100, 10_000} {
		b.Run(fmt.Sprintf("values=%d", values), func(b *testing.B) {
			now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			db := benchDB(b, now)
			start := now.UnixMilli()
			rows := 0
			b.ResetTimer()
			for i := range b.N {
				var bt history.Batch
				from := start + int64(i)*10_000
				for s := int64(0); s < 10; s++ {
					for v := range values {
						bt.KeySamples = append(bt.KeySamples, history.KeySample{App: "bench", Graph: "g", Node: "n", Path: "main", Session: start,
							Recorder: "0123456789abcdef0123456789abcdef", Second: from + s*1000, Scope: fmt.Sprintf(`{"payload.account":"acct-%06d"}`, v), Items: 3, Cost: 3})
					}
				}
				rows += len(bt.KeySamples)
				if err := db.Write(b.Context(), bt); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			var size int64
			if err := db.Pool().QueryRow(b.Context(), `SELECT pg_total_relation_size('shadow_key_samples')`).Scan(&size); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(size)/float64(rows), "bytes/row")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(rows), "µs/row")
		})
	}
}
