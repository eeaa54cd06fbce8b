package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Limiter admits n units, blocking until they fit. A nil Limiter admits
// everything at once.
type Limiter interface {
	Wait(ctx context.Context, n int) error
}

// TokenBucket is golang.org/x/time/rate: one process's own bucket.
type TokenBucket struct{ l *rate.Limiter }

// NewTokenBucket admits perSecond units a second with a burst of burst.
func NewTokenBucket(perSecond float64, burst int) *TokenBucket {
	return &TokenBucket{l: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// Wait blocks until n units fit (n above the burst is taken in burst-sized
// steps).
func (t *TokenBucket) Wait(ctx context.Context, n int) error {
	for n > 0 {
		k := min(n, t.l.Burst())
		if err := t.l.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// GCRA is go-redis/redis_rate: a generic cell-rate limiter whose state is
// one Redis key, so every process naming the key shares it.
type GCRA struct {
	l     *redis_rate.Limiter
	key   string
	limit redis_rate.Limit
}

// NewGCRA admits perSecond units a second with a burst of burst on key.
func NewGCRA(rdb *redis.Client, key string, perSecond, burst int) *GCRA {
	return &GCRA{l: redis_rate.NewLimiter(rdb), key: key, limit: redis_rate.Limit{Rate: perSecond, Burst: burst, Period: time.Second}}
}

// Wait asks for n units (in burst-sized steps), sleeping the limiter's
// RetryAfter whenever it refuses.
func (g *GCRA) Wait(ctx context.Context, n int) error {
	for n > 0 {
		k := min(n, g.limit.Burst)
		res, err := g.l.AllowN(ctx, g.key, g.limit, k)
		if err != nil {
			return fmt.Errorf("redis_rate: %w", err)
		}
		if res.Allowed == k {
			n -= k
			continue
		}
		wait := res.RetryAfter
		if wait <= 0 {
			wait = time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Job is one pacing run: move Total items from Source to Dest.
type Job struct {
	Client        *queen.Client
	Source, Group string
	Dest          string
	Workers       int
	Batch         int
	Total         int
	// Limiter paces every claim; nil = no budget.
	Limiter Limiter
	// Deadline bounds the run.
	Deadline time.Duration
	// NoStamps leaves Result.Stamps empty: a runner measured at the
	// egress keeps no per-item state, like the relay it is compared with.
	NoStamps bool
	// GateStamp, when its Graph is set, adds a `_gate` member of that shape
	// (At = the settle's time) to every pushed object payload through
	// gate-relay's own splice (cost.GateStamp.AppendStamped), so the loop
	// pushes the same bytes gate-relay does and pays what it pays for
	// them; a payload that is not an object is pushed as it is.
	GateStamp cost.GateStamp
	// RiderKey, when set, makes every transaction also carry the charge
	// gate-relay's rider path carries, built and read by libs/budget: one
	// required incr of the claim's size on this counter (namespace gate,
	// max 1e9) and a getMany of it. A commit whose rider did not
	// apply counts as an error. RiderTTLSeconds is the counter's window
	// (0 is 1 s, the overhead graph's sub-window).
	RiderKey        string
	RiderTTLSeconds int64
	// AckLast settles each claim with one completed ack of its last
	// message, as gate-relay does (the broker's ack is cumulative: it
	// settles every message before it), instead of an ack per message.
	AckLast bool
}

// Result is what a pacing run did.
type Result struct {
	Moved, Commits, Claims int
	// Stamps are commit times, epoch ms, one per item moved.
	Stamps []int64
	// FirstMs and LastMs bound the commits.
	FirstMs, LastMs int64
	Errors          int
}

// ItemsPerSec is Moved over the first-to-last commit span.
func (r Result) ItemsPerSec() float64 {
	if r.LastMs <= r.FirstMs || r.Moved < 2 {
		return 0
	}
	return float64(r.Moved) / (float64(r.LastMs-r.FirstMs) / 1000)
}

// ErrIncomplete is returned when the deadline passed before Total moved.
var ErrIncomplete = errors.New("deadline passed before the whole backlog moved")

// LeaseSeconds is the lease every Job claims under: the relay's default
// (GATE_LEASE_SECONDS), so a bare loop claims the way a relay does.
const LeaseSeconds = 10

// Run moves the backlog: each worker pops a claim from one partition
// (wildcard, batch, long-poll), waits for the limiter, and commits one
// transaction acking the claim and pushing every item to the same-named
// partition of Dest.
func (j Job) Run(ctx context.Context) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, j.Deadline)
	defer cancel()
	var moved atomic.Int64
	var mu sync.Mutex
	var res Result
	var wg sync.WaitGroup
	for w := 0; w < j.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var txn queen.Transaction
			var batch budget.Batch
			limiter := budget.Limiter{KV: j.Client, NS: "gate"}
			for ctx.Err() == nil && moved.Load() < int64(j.Total) {
				claim, err := j.Client.Pop(ctx, queen.PopRequest{Queue: j.Source, ConsumerGroup: j.Group, SubscriptionMode: queen.SubscribeAll,
					Batch: j.Batch, Wait: true, Timeout: 500 * time.Millisecond, LeaseSeconds: LeaseSeconds})
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						res.Errors++
						mu.Unlock()
					}
					continue
				}
				if claim.Empty() {
					continue
				}
				if j.Limiter != nil {
					if err := j.Limiter.Wait(ctx, len(claim.Messages)); err != nil {
						return
					}
				}
				txn.Reset()
				txn.Lean = true
				items := make([]queen.PushItem, 0, len(claim.Messages))
				// The claim's stamp is encoded once and spliced into each
				// payload the way gate-relay splices it (cost's one splice).
				var stamp cost.GateStamp
				var splice cost.Splice
				var arena []byte
				if j.GateStamp.Graph != "" {
					stamp = j.GateStamp
					stamp.At = time.Now().UnixMilli()
					splice = cost.Splice{Head: stamp.AppendHead(nil), KeepAttempt: true}
					size := 0
					for i := range claim.Messages {
						size += len(claim.Messages[i].Data) + len(splice.Head) + 12
					}
					arena = make([]byte, 0, size)
				}
				if j.AckLast {
					// A claim here is one partition (wildcard pop, one lease).
					txn.Ack(claim.Messages[len(claim.Messages)-1].AckItem(queen.AckCompleted, ""))
				}
				for i := range claim.Messages {
					m := &claim.Messages[i]
					if !j.AckLast {
						txn.Ack(m.AckItem(queen.AckCompleted, ""))
					}
					payload := m.Data
					if splice.Head != nil {
						from := len(arena)
						if out, ok := stamp.AppendStamped(arena, m.Data, splice); ok {
							arena, payload = out, out[from:len(out):len(out)]
						}
					}
					items = append(items, queen.PushItem{Queue: j.Dest, Partition: m.Partition, Payload: payload, TransactionID: m.TransactionID, PayloadValid: true})
				}
				txn.Push(items...)
				var charge *budget.Charge
				if j.RiderKey != "" {
					batch.Reset()
					batch.AddN(1, []int{batch.Counter(j.RiderKey, 1_000_000_000, max(j.RiderTTLSeconds, 1), "bench")}, len(items))
					charge, _ = limiter.Riders(&txn, &batch, len(items))
				}
				tr, err := j.Client.Transact(ctx, &txn)
				if err == nil {
					err = tr.Err()
				}
				if err == nil && charge != nil {
					err = limiter.Committed(&batch, charge, &tr)
				}
				now := time.Now().UnixMilli()
				mu.Lock()
				res.Claims++
				if err != nil {
					res.Errors++
					mu.Unlock()
					continue
				}
				res.Commits++
				res.Moved += len(items)
				if res.FirstMs == 0 || now < res.FirstMs {
					res.FirstMs = now
				}
				res.LastMs = max(res.LastMs, now)
				if !j.NoStamps {
					for range items {
						res.Stamps = append(res.Stamps, now)
					}
				}
				mu.Unlock()
				moved.Add(int64(len(items)))
			}
		}()
	}
	wg.Wait()
	if res.Moved < j.Total {
		return res, fmt.Errorf("%w: moved %d of %d in %v", ErrIncomplete, res.Moved, j.Total, j.Deadline)
	}
	return res, nil
}
