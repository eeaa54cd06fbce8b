package push

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/queen-mq/gate/libs/queen"
)

// pushCallSlots is how many broker push calls the front door keeps in
// flight at once. While all are busy, arriving pushes queue and leave
// together in the next call; two cores gain nothing from more.
const pushCallSlots = 4

// pushBatcher coalesces the push front door's concurrent requests into
// fewer broker calls, the way a database commits a group. A push that finds
// a free call slot goes out at once, alone, so an idle door waits for
// nothing; pushes that arrive while every slot is busy queue, and the call
// that frees a slot takes them with it (up to maxItems items and maxBytes
// payload bytes) in one POST /api/v1/push. Each request gets its own element
// of the broker's answer: the broker answers per item, in request order,
// and treats a repeat of an earlier item's (queue, partition, txn) in the
// same call as a duplicate, exactly as it would across two calls. There is
// no timer: batches grow only while the broker is the bottleneck.
//
// A request that stops waiting (its context ends) before its call is sent
// is left out of the call and was never queued; one that stops after its
// call was sent is told the outcome is unknown.
type pushBatcher struct {
	// push stores items; it is the broker client's Push.
	push     func(context.Context, []queen.PushItem) ([]queen.PushResult, error)
	maxItems int
	maxBytes int
	// slots is how many calls may be in flight; 0 means pushCallSlots.
	slots int

	mu    sync.Mutex
	queue []*pushWait
	busy  int // calls in flight, at most slots

	// calls and items count broker calls and the items they carried.
	calls, items atomic.Int64
}

// Wait states of a push: queued, taken into a call, or abandoned by its
// request before a call took it.
const (
	pushQueued int32 = iota
	pushSent
	pushGone
)

type pushWait struct {
	item  queen.PushItem
	state atomic.Int32
	done  chan struct{}
	res   queen.PushResult
	err   error
}

// errPushUnknown is a push whose request stopped waiting after its broker
// call was sent: the item may or may not be stored.
var errPushUnknown = errors.New("the push was sent to the broker, but its answer did not come back before the request ended")

// Push stores one item, alone or with the pushes queued beside it, and
// returns the broker's result for it.
func (b *pushBatcher) Push(ctx context.Context, item queen.PushItem) (queen.PushResult, error) {
	if b.maxItems <= 1 {
		res, err := b.push(ctx, []queen.PushItem{item})
		b.calls.Add(1)
		b.items.Add(1)
		if err != nil {
			return queen.PushResult{}, err
		}
		return res[0], nil
	}
	w := &pushWait{item: item, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	var batch []*pushWait
	if b.busy < cmp.Or(b.slots, pushCallSlots) {
		b.busy++
		batch = b.take()
	}
	b.mu.Unlock()
	if batch != nil {
		// The call runs beside this request, so the request still ends
		// with its own context however long the broker takes.
		go b.send(batch)
	}
	select {
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
	}
	if w.state.CompareAndSwap(pushQueued, pushGone) {
		return queen.PushResult{}, fmt.Errorf("the push waited for a broker call and was never sent: %w", context.Cause(ctx))
	}
	select {
	case <-w.done: // the answer and the end came together: the answer wins
		return w.res, w.err
	default:
	}
	return queen.PushResult{}, fmt.Errorf("%w: %w", errPushUnknown, context.Cause(ctx))
}

// take removes the next call's pushes from the queue, oldest first: at
// least one, then while both bounds hold. Abandoned pushes are dropped. The
// caller holds mu.
func (b *pushBatcher) take() []*pushWait {
	var batch []*pushWait
	bytes, n := 0, 0
	for ; n < len(b.queue); n++ {
		w := b.queue[n]
		size := len(w.item.Payload)
		if len(batch) > 0 && (len(batch) == b.maxItems || bytes+size > b.maxBytes) {
			break
		}
		if !w.state.CompareAndSwap(pushQueued, pushSent) {
			continue
		}
		batch = append(batch, w)
		bytes += size
	}
	left := copy(b.queue, b.queue[n:])
	clear(b.queue[left:])
	b.queue = b.queue[:left]
	return batch
}

// send holds one call slot: it makes batch's call (never empty: it holds
// at least the push that took the slot), answers its pushes, and goes on
// with whatever queued meanwhile until the queue is empty.
func (b *pushBatcher) send(batch []*pushWait) {
	for {
		b.call(batch)
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

// call pushes batch in one broker call. The call belongs to no single
// request, so it runs on its own context (the client's call timeout bounds
// it). When the broker refuses a call of several items as a bad request,
// each item is sent alone, so one refused item fails only its own push.
func (b *pushBatcher) call(batch []*pushWait) {
	items := make([]queen.PushItem, len(batch))
	for i, w := range batch {
		items[i] = w.item
	}
	res, err := b.push(context.Background(), items)
	b.calls.Add(1)
	b.items.Add(int64(len(items)))
	if err != nil && len(batch) > 1 && refusedAsBadInput(err) {
		for _, w := range batch {
			b.call([]*pushWait{w})
		}
		return
	}
	for i, w := range batch {
		if err != nil {
			w.err = err
		} else {
			w.res = res[i]
		}
		close(w.done)
	}
}

// refusedAsBadInput reports a broker answer that refuses the call's input
// before storing any of it (400, 413, 422): another split of the same items
// may pass. Rate limits, timeouts and server errors refuse every split
// alike.
func refusedAsBadInput(err error) bool {
	switch queen.StatusOf(err) {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}
