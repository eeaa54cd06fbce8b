package push

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/queen-mq/gate/libs/store"
)

// recordCallSlots is how many kv calls recording items the door keeps in
// flight at once: one coalesces best (BenchmarkPushTxn: 5.2–5.7 k pushes/s
// with one, 3.0–3.6 k with two, on 4 producers).
const recordCallSlots = 1

// recordBatcher coalesces the push door's item records (explain by
// transaction id) into few kv calls, as pushBatcher does the pushes: a
// record that finds a free slot goes out at once, alone; records that
// arrive while every slot is busy queue, and the call that frees a slot
// takes them with it (up to store.MaxItemPuts) in one kv call. No timer.
type recordBatcher struct {
	put func(context.Context, []store.ItemPut) error

	mu    sync.Mutex
	queue []*recordWait
	busy  int

	// calls and items count kv calls and the records they carried.
	calls, items atomic.Int64
}

type recordWait struct {
	put  store.ItemPut
	done chan struct{}
	err  error
}

// Put records one item, alone or with the records queued beside it. A
// request that stops waiting leaves its record to the call (it is written
// or fails on its own).
func (b *recordBatcher) Put(ctx context.Context, p store.ItemPut) error {
	w := &recordWait{put: p, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	var batch []*recordWait
	if b.busy < recordCallSlots {
		b.busy++
		batch = b.take()
	}
	b.mu.Unlock()
	if batch != nil {
		go b.send(batch)
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// take removes the next call's records from the queue, oldest first. The
// caller holds mu.
func (b *recordBatcher) take() []*recordWait {
	n := min(len(b.queue), store.MaxItemPuts)
	if n == 0 {
		return nil
	}
	batch := append([]*recordWait(nil), b.queue[:n]...)
	left := copy(b.queue, b.queue[n:])
	clear(b.queue[left:])
	b.queue = b.queue[:left]
	return batch
}

// send holds one call slot: it writes batch, answers its records, and goes
// on with whatever queued meanwhile until the queue is empty.
func (b *recordBatcher) send(batch []*recordWait) {
	for {
		puts := make([]store.ItemPut, len(batch))
		for i, w := range batch {
			puts[i] = w.put
		}
		err := b.put(context.Background(), puts)
		b.calls.Add(1)
		b.items.Add(int64(len(puts)))
		for _, w := range batch {
			w.err = err
			close(w.done)
		}
		b.mu.Lock()
		batch = b.take()
		if len(batch) == 0 {
			b.busy--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
}
