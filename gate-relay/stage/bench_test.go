package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/vendormeter"
)

// benchStage is a terminal stage with one wide budget, as gate-bench's
// overhead job declares it.
func benchStage(app, source, egress string) (plan.Stage, *plan.Node) {
	st := plan.Stage{Path: "main", Node: "n", Source: source, Group: source + ".g", Batch: 200, Concurrency: 16, Share: 1,
		Destinations: []plan.Destination{{Node: "n", Queue: egress, DerivesTransactionID: true, Terminal: true, Label: plan.TerminalLabel(app, "g", "main", "n")}}}
	node := &plan.Node{Name: "n", Cost: cost.Fixed(1), Budgets: []plan.Budget{{ID: "wide", Key: plan.BudgetKey(app, "g", "n", "wide"),
		CountSub: 1_000_000_000, WindowSubSeconds: 1, SubWindows: 1, Count: 1_000_000_000, TimeMs: 1000,
		Ceilings: map[string]int64{"main": 1_000_000_000}}}}
	return st, node
}

// BenchmarkSettleBuild is the relay's own CPU per claim of 200 small
// payloads: classify, group the charges and build the settle (acks,
// stamped pushes, derived ids). No I/O.
func BenchmarkSettleBuild(b *testing.B) { benchSettleBuild(b, nil) }

// BenchmarkSettleBuildSigned is BenchmarkSettleBuild with charge records:
// every stamp carries the item's signed charge (what a settle needs).
func BenchmarkSettleBuildSigned(b *testing.B) {
	sg, err := cost.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	benchSettleBuild(b, sg)
}

func benchSettleBuild(b *testing.B, signer *cost.Signer) {
	c, _ := queen.New("http://127.0.0.1:1")
	st, node := benchStage("a", "src", "out")
	if signer != nil {
		node.Cost = estimated
	}
	s, err := New(Config{App: "a", Graph: "g", Stage: st, Node: node, Client: c, Limiter: &budget.Limiter{}, Signer: signer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]queen.Message, 200)
	for i := range msgs {
		msgs[i] = queen.Message{ID: "m" + strconv.Itoa(i), TransactionID: "0198a4b2-7c1d-7e3f-9a0b-" + strconv.Itoa(100000000000+i),
			Data: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`), PartitionID: "0198a4b2-7c1d-7e3f-9a0b-00000000p001",
			Partition: "p1", LeaseID: "0198a4b2-7c1d-7e3f-9a0b-00000000l001", ConsumerGroup: "src.g"}
	}
	b.ReportAllocs()
	sc := &scratch{}
	for b.Loop() {
		h := handler{s: s, ctx: context.Background(), msgs: msgs, sc: sc}
		h.classify()
		h.buildBatch()
		t, end, _, _, _ := h.transaction(len(msgs))
		if end != len(msgs) || t.Slots() != len(msgs)+1 { // a push per message and one cumulative ack
			b.Fatalf("settle of %d messages with %d slots", end, t.Slots())
		}
		if signer != nil && !bytes.Contains(sc.pushes[0].Payload, []byte(`"sig":"`)) {
			b.Fatalf("a signed stage's push carries no signature: %s", sc.pushes[0].Payload)
		}
	}
}

// BenchmarkStageRelay drains a backlog through one stage (16 workers,
// batch 200, 16 partitions, nothing refused) against the in-process
// miniqueen: the relay job of gate-bench's overhead scenario, for
// profiling (-cpuprofile). Reports items/s.
func BenchmarkStageRelay(b *testing.B) { benchStageRelay(b, false) }

// BenchmarkStageRelayRiders is BenchmarkStageRelay with the charge riding
// the settle transaction (after the probe), as gate-relay runs by default.
func BenchmarkStageRelayRiders(b *testing.B) { benchStageRelay(b, true) }

// BenchmarkStageRelayRidersMirrored is BenchmarkStageRelayRiders with the
// budget mirroring a vendor meter (issue 26's target: within 5% of the
// same graph without): the relay's meter copy read before every attempt,
// a row one below the declared count in place.
func BenchmarkStageRelayRidersMirrored(b *testing.B) { benchStageRelayWith(b, true, true) }

// BenchmarkStageRelayRidersSigned is BenchmarkStageRelayRiders with the
// fleet's stamp key: every item carries its signed charge record, as a
// relay that read the key runs.
func BenchmarkStageRelayRidersSigned(b *testing.B) {
	sg, err := cost.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	benchStageRelayFull(b, true, false, sg)
}

func benchStageRelay(b *testing.B, riders bool) { benchStageRelayWith(b, riders, false) }

func benchStageRelayWith(b *testing.B, riders, mirrored bool) {
	benchStageRelayFull(b, riders, mirrored, nil)
}

// estimated is the signed benchmarks' cost: read from the payload (it
// falls back to 1), so the stage records every charge.
var estimated = cost.Rule{Path: "payload.tokens", Default: 1, Max: 1}

// BenchmarkStageRelayThin is the spread load's claim (issue 24, a trickle
// per graph over 1,000 graphs): the stage's batch of 200, riders, no
// linger, but every partition holds one item, so each claim is one item
// and pays a whole claim (pop, charge riding the settle, lease renewal).
// ns/op is per item; compare its CPU profile with
// BenchmarkStageRelayRiders'.
func BenchmarkStageRelayThin(b *testing.B) {
	benchStageRelayBatch(b, true, false, nil, 200, 4, 1)
}

func benchStageRelayFull(b *testing.B, riders, mirrored bool, signer *cost.Signer) {
	benchStageRelayBatch(b, riders, mirrored, signer, 200, 16, 200)
}

// benchStageRelayBatch moves perOp items per op through one stage of the
// given batch and workers.
func benchStageRelayBatch(b *testing.B, riders, mirrored bool, signer *cost.Signer, batch, workers uint32, perOp int) {
	br := gatetest.NewBroker(b)
	br.RequireMini(b, "the benchmark measures the relay against the in-process broker")
	c, err := queen.New(br.URL)
	if err != nil {
		b.Fatal(err)
	}
	src, egress := br.Queue("src"), br.Queue("out")
	st, node := benchStage(br.Prefix, src, egress)
	st.Batch, st.Concurrency = batch, workers
	if signer != nil {
		node.Cost = estimated
	}
	total := b.N * perOp
	if perOp == 1 {
		fillThin(b, c, src, total)
	} else {
		fillBench(b, c, src, total)
	}
	var moved atomic.Int64
	done := make(chan struct{})
	observe := func(ev Settled) {
		if moved.Add(int64(ev.Items)) == int64(total) {
			close(done)
		}
	}
	lim := &budget.Limiter{KV: c, NS: br.Namespace()}
	if mirrored {
		bud := &node.Budgets[0]
		bud.VendorMeter = &plan.VendorMeter{Headers: "x-ratelimit", Key: plan.MeterKey(bud.Key)}
		lim.Meters = budget.NewMeters(c, br.Namespace(), nil, 0)
		// A stated limit just below the declared count: a row every read
		// finds and every attempt applies.
		rd := vendormeter.Reading{Status: 200, Limit: bud.Count - 1, HasLimit: true}
		if _, err := lim.Observe(context.Background(), bud, rd, time.Now(), budget.ObserveOptions{Hold: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	adm := NewAdmission(riders, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := adm.Probe(context.Background(), lim, c, plan.RiderProbeKey("bench")); err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{App: br.Prefix, Graph: "g", Stage: st, Node: node, Client: c,
		Limiter: lim, Lease: 10 * time.Second, PollTimeout: 2 * time.Second, Admission: adm, Signer: signer,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: observe})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b.ResetTimer()
	start := time.Now()
	if err := s.Start(runCtx); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("moved %d of %d in 5 minutes", moved.Load(), total)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	<-s.Stopped()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "items/s")
}

// fillBench pushes total small payloads to queue over 16 partitions.
func fillBench(b *testing.B, c *queen.Client, queue string, total int) {
	b.Helper()
	var batch []queen.PushItem
	for i := 0; i < total; i++ {
		batch = append(batch, queen.PushItem{Queue: queue, Partition: "p" + strconv.Itoa(i%16), Payload: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)})
		if len(batch) == 1000 || i == total-1 {
			if _, err := c.Push(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// fillThin pushes total small payloads to queue, one per partition.
func fillThin(b *testing.B, c *queen.Client, queue string, total int) {
	b.Helper()
	var batch []queen.PushItem
	for i := 0; i < total; i++ {
		batch = append(batch, queen.PushItem{Queue: queue, Partition: "t" + strconv.Itoa(i), Payload: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)})
		if len(batch) == 1000 || i == total-1 {
			if _, err := c.Push(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkBareLoop is BenchmarkStageRelay's job without Gate: 16 workers
// pop 200 and settle each claim with one transaction (an ack and a push
// per item, as gate-bench's bare loop), no budget and no stamp. The
// stage's items/s is compared with this one.
func BenchmarkBareLoop(b *testing.B) {
	br := gatetest.NewBroker(b)
	br.RequireMini(b, "the benchmark measures against the in-process broker")
	c, err := queen.New(br.URL)
	if err != nil {
		b.Fatal(err)
	}
	src, egress := br.Queue("src"), br.Queue("out")
	total := b.N * 200
	fillBench(b, c, src, total)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var moved atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := queen.PopRequest{Queue: src, ConsumerGroup: src + ".g", Batch: 200, Wait: true, Timeout: time.Second, LeaseSeconds: 10, SubscriptionMode: queen.SubscribeAll}
			for moved.Load() < int64(total) && ctx.Err() == nil {
				cl, err := c.Pop(ctx, req)
				if err != nil || cl.Empty() {
					continue
				}
				t := &queen.Transaction{Lean: true}
				items := make([]queen.PushItem, len(cl.Messages))
				for i, m := range cl.Messages {
					t.Ack(m.AckItem(queen.AckCompleted, ""))
					items[i] = queen.PushItem{Queue: egress, Partition: m.Partition, Payload: m.Data, TransactionID: m.TransactionID, PayloadValid: true}
				}
				t.Push(items...)
				if res, err := c.Transact(ctx, t); err == nil && res.Success {
					if moved.Add(int64(len(items))) == int64(total) {
						close(done)
					}
				}
			}
		}()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("moved %d of %d in 5 minutes", moved.Load(), total)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	wg.Wait()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "items/s")
}
