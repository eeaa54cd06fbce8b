package push

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// doorBroker stands in for the broker's push route: it records every call's
// items, answers each item with a message id naming its payload, and holds
// calls while held is set.
type doorBroker struct {
	mu     sync.Mutex
	calls  [][]string
	held   chan struct{} // nil: answer at once
	inCall chan struct{} // signalled when a call arrives (buffered)
	// refuse answers a call that carries this payload 400, as a broker
	// refuses a malformed item before storing anything.
	refuse string
	// fail answers every call with this error.
	fail error
}

func newDoorBroker() *doorBroker { return &doorBroker{inCall: make(chan struct{}, 1024)} }

func (d *doorBroker) push(ctx context.Context, items []queen.PushItem) ([]queen.PushResult, error) {
	payloads := make([]string, len(items))
	for i, it := range items {
		payloads[i] = string(it.Payload)
	}
	d.mu.Lock()
	d.calls = append(d.calls, payloads)
	held := d.held
	d.mu.Unlock()
	select {
	case d.inCall <- struct{}{}:
	default: // nobody counts calls this many
	}
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d.fail != nil {
		return nil, d.fail
	}
	for _, p := range payloads {
		if d.refuse != "" && p == d.refuse {
			return nil, &queen.Error{Status: http.StatusBadRequest, Method: http.MethodPost, Route: "/api/v1/push", Message: "items[?].payload is refused"}
		}
	}
	out := make([]queen.PushResult, len(items))
	for i, p := range payloads {
		out[i] = queen.PushResult{Index: i, MessageID: "m-" + p, Status: queen.PushQueued}
	}
	return out, nil
}

// hold makes calls wait until the returned release is called.
func (d *doorBroker) hold() (release func()) {
	ch := make(chan struct{})
	d.mu.Lock()
	d.held = ch
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		d.held = nil
		d.mu.Unlock()
		close(ch)
	}
}

func (d *doorBroker) sent() [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]string(nil), d.calls...)
}

// waitCalls waits until n calls have reached the broker.
func (d *doorBroker) waitCalls(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-d.inCall:
		case <-time.After(10 * time.Second):
			t.Fatalf("the broker saw %d calls, want %d", len(d.sent()), n)
		}
	}
}

func doorItem(p string) queen.PushItem {
	return queen.PushItem{Queue: "q", Payload: []byte(p)}
}

type doorAnswer struct {
	payload string
	res     queen.PushResult
	err     error
}

// pushAll starts one push per payload and returns their answers on a
// channel as they come.
func pushAll(ctx context.Context, b *pushBatcher, payloads ...string) <-chan doorAnswer {
	out := make(chan doorAnswer, len(payloads))
	for _, p := range payloads {
		go func() {
			res, err := b.Push(ctx, doorItem(p))
			out <- doorAnswer{p, res, err}
		}()
	}
	return out
}

// queued waits until n pushes wait in b's queue.
func queued(t *testing.T, b *pushBatcher, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		got := len(b.queue)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pushes queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// fillSlots holds the broker and starts one push per call slot of b, so
// that every slot is busy and the next pushes queue; release lets the
// broker answer.
func fillSlots(t *testing.T, d *doorBroker, b *pushBatcher) (release func(), busy <-chan doorAnswer) {
	t.Helper()
	release = d.hold()
	busy = pushAll(context.Background(), b, names("busy", pushCallSlots)...)
	d.waitCalls(t, pushCallSlots)
	return release, busy
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func TestAPushAtAnIdleDoorGoesOutAtOnceInACallOfItsOwn(t *testing.T) {
	d := newDoorBroker()
	b := &pushBatcher{push: d.push, maxItems: 64, maxBytes: 1 << 20}
	for _, p := range []string{"a", "b", "c"} {
		res, err := b.Push(context.Background(), doorItem(p))
		if err != nil || res.MessageID != "m-"+p || !res.Stored() {
			t.Fatalf("push %s: %+v %v", p, res, err)
		}
	}
	if got := d.sent(); fmt.Sprint(got) != "[[a] [b] [c]]" {
		t.Fatalf("broker calls %v, want one call per push made one after another", got)
	}
}

func TestPushesThatArriveWhileEveryCallIsBusyLeaveTogetherEachWithItsOwnAnswer(t *testing.T) {
	d := newDoorBroker()
	b := &pushBatcher{push: d.push, maxItems: 64, maxBytes: 1 << 20}
	release, first := fillSlots(t, d, b)
	later := names("later", 10)
	rest := pushAll(context.Background(), b, later...)
	queued(t, b, len(later))
	release()
	for range pushCallSlots {
		if a := <-first; a.err != nil || a.res.MessageID != "m-"+a.payload {
			t.Fatalf("push %s: %+v %v", a.payload, a.res, a.err)
		}
	}
	for range later {
		if a := <-rest; a.err != nil || a.res.MessageID != "m-"+a.payload {
			t.Fatalf("push %s got the answer %+v (%v), want its own message id m-%s", a.payload, a.res, a.err, a.payload)
		}
	}
	calls := d.sent()
	if len(calls) != pushCallSlots+1 || len(calls[pushCallSlots]) != len(later) {
		t.Fatalf("broker calls %v, want %d single pushes and then the %d queued ones in one call", calls, pushCallSlots, len(later))
	}
	if b.calls.Load() != int64(len(calls)) || b.items.Load() != int64(pushCallSlots+len(later)) {
		t.Fatalf("counted %d calls of %d items, the broker saw %v", b.calls.Load(), b.items.Load(), calls)
	}
}

func TestACallCarriesAtMostMaxItemsAndMaxBytes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		maxItems, maxB int
		payloads       []string
		want           string
	}{
		{"items", 3, 1 << 20, names("i", 7), "[[i0 i1 i2] [i3 i4 i5] [i6]]"},
		// 4 bytes each: two fit in 9 bytes, a third does not.
		{"bytes", 64, 9, []string{"aaaa", "bbbb", "cccc", "dddd", "eeee"}, "[[aaaa bbbb] [cccc dddd] [eeee]]"},
		// An item over the byte bound still goes, alone.
		{"oversized item", 64, 3, []string{"aaaa", "b", "c"}, "[[aaaa] [b c]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoorBroker()
			// One call slot, so the queue leaves through it in order.
			b := &pushBatcher{push: d.push, maxItems: tc.maxItems, maxBytes: tc.maxB, slots: 1}
			release := d.hold()
			busy := pushAll(context.Background(), b, "busy")
			d.waitCalls(t, 1)
			var answers []<-chan doorAnswer
			for i, p := range tc.payloads {
				answers = append(answers, pushAll(context.Background(), b, p))
				queued(t, b, i+1) // one at a time: a known order
			}
			release()
			<-busy
			for i, ch := range answers {
				if a := <-ch; a.err != nil || a.res.MessageID != "m-"+tc.payloads[i] {
					t.Fatalf("push %s: %+v %v", tc.payloads[i], a.res, a.err)
				}
			}
			if after := d.sent()[1:]; fmt.Sprint(after) != tc.want {
				t.Fatalf("queued pushes left in calls %v, want %s", after, tc.want)
			}
		})
	}
}

func TestAPushWhoseRequestEndsWhileItQueuesIsNeverSent(t *testing.T) {
	d := newDoorBroker()
	b := &pushBatcher{push: d.push, maxItems: 64, maxBytes: 1 << 20}
	release, busy := fillSlots(t, d, b)
	ctx, cancel := context.WithCancel(context.Background())
	gone := pushAll(ctx, b, "gone")
	queued(t, b, 1)
	stay := pushAll(context.Background(), b, "stay")
	queued(t, b, 2)
	cancel()
	a := <-gone
	if !errors.Is(a.err, context.Canceled) || errors.Is(a.err, errPushUnknown) {
		t.Fatalf("the abandoned push answered %+v %v, want context.Canceled and not 'outcome unknown'", a.res, a.err)
	}
	release()
	for range pushCallSlots {
		<-busy
	}
	if a := <-stay; a.err != nil || a.res.MessageID != "m-stay" {
		t.Fatalf("the push queued behind it: %+v %v", a.res, a.err)
	}
	for _, c := range d.sent() {
		for _, p := range c {
			if p == "gone" {
				t.Fatalf("the abandoned push reached the broker: %v", d.sent())
			}
		}
	}
}

func TestAPushWhoseRequestEndsAfterItsCallWasSentIsToldTheOutcomeIsUnknown(t *testing.T) {
	d := newDoorBroker()
	b := &pushBatcher{push: d.push, maxItems: 64, maxBytes: 1 << 20}
	release := d.hold()
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	a := pushAll(ctx, b, "sent")
	d.waitCalls(t, 1)
	cancel()
	got := <-a
	if !errors.Is(got.err, errPushUnknown) || !errors.Is(got.err, context.Canceled) {
		t.Fatalf("answer %+v %v, want errPushUnknown wrapping context.Canceled", got.res, got.err)
	}
}

func TestABrokerRefusalOfOneItemFailsOnlyThatPush(t *testing.T) {
	d := newDoorBroker()
	d.refuse = "bad"
	b := &pushBatcher{push: d.push, maxItems: 64, maxBytes: 1 << 20}
	release, busy := fillSlots(t, d, b)
	payloads := []string{"x", "bad", "y"}
	answers := pushAll(context.Background(), b, payloads...)
	queued(t, b, len(payloads))
	release()
	for range pushCallSlots {
		<-busy
	}
	for range payloads {
		a := <-answers
		switch {
		case a.payload == "bad" && queen.StatusOf(a.err) != http.StatusBadRequest:
			t.Fatalf("the refused push answered %+v %v, want the broker's 400", a.res, a.err)
		case a.payload != "bad" && (a.err != nil || a.res.MessageID != "m-"+a.payload):
			t.Fatalf("push %s beside the refused one: %+v %v, want stored", a.payload, a.res, a.err)
		}
	}
}

func TestAFailedCallFailsEveryPushItCarried(t *testing.T) {
	d := newDoorBroker()
	d.fail = &queen.Error{Status: http.StatusInternalServerError, Method: http.MethodPost, Route: "/api/v1/push", Message: "database down"}
	b := &pushBatcher{push: d.push, maxItems: 64, maxBytes: 1 << 20}
	release, busy := fillSlots(t, d, b)
	answers := pushAll(context.Background(), b, names("q", 5)...)
	queued(t, b, 5)
	release()
	for range pushCallSlots + 5 {
		var a doorAnswer
		select {
		case a = <-busy:
		case a = <-answers:
		}
		if queen.StatusOf(a.err) != http.StatusInternalServerError {
			t.Fatalf("push %s: %+v %v, want the broker's 500", a.payload, a.res, a.err)
		}
	}
	if n := len(d.sent()); n != pushCallSlots+1 {
		t.Fatalf("%d broker calls, want %d: a server error is not retried item by item", n, pushCallSlots+1)
	}
}

func TestPushBatchOneSendsEveryPushInACallOfItsOwnWithoutALimitOnCalls(t *testing.T) {
	d := newDoorBroker()
	b := &pushBatcher{push: d.push, maxItems: 1, maxBytes: 1 << 20}
	release := d.hold()
	n := 3 * pushCallSlots
	answers := pushAll(context.Background(), b, names("p", n)...)
	d.waitCalls(t, n) // all in flight at once: no slot limit
	release()
	for range n {
		if a := <-answers; a.err != nil || a.res.MessageID != "m-"+a.payload {
			t.Fatalf("push %s: %+v %v", a.payload, a.res, a.err)
		}
	}
	for _, c := range d.sent() {
		if len(c) != 1 {
			t.Fatalf("a call carried %v with GATE_PUSH_BATCH=1", c)
		}
	}
}

// Under -race: many pushes, some abandoned at random, against a broker
// that answers at random speeds. Every push the broker saw was sent once;
// every push that was answered got its own result; no abandoned-before-send
// push reached the broker.
func TestConcurrentPushesAreEachSentAtMostOnceAndAnsweredWithTheirOwnResult(t *testing.T) {
	d := newDoorBroker()
	slow := d.push
	b := &pushBatcher{maxItems: 16, maxBytes: 1 << 20, push: func(ctx context.Context, items []queen.PushItem) ([]queen.PushResult, error) {
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		return slow(ctx, items)
	}}
	const n = 2000
	type outcome struct {
		gone    bool // the request ended before any answer
		unknown bool
		err     error
		res     queen.PushResult
	}
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx := context.Background()
			if i%7 == 0 {
				c, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(500))*time.Microsecond)
				defer cancel()
				ctx = c
			}
			res, err := b.Push(ctx, doorItem("p"+strconv.Itoa(i)))
			o := outcome{err: err, res: res}
			o.unknown = errors.Is(err, errPushUnknown)
			o.gone = err != nil && !o.unknown && errors.Is(err, context.DeadlineExceeded)
			outs[i] = o
		})
	}
	wg.Wait()
	idle(t, b) // the calls of pushes whose requests ended may still run
	seen := map[string]int{}
	for _, c := range d.sent() {
		if len(c) > 16 {
			t.Fatalf("a call carried %d items, over maxItems 16", len(c))
		}
		for _, p := range c {
			seen[p]++
		}
	}
	for i, o := range outs {
		p := "p" + strconv.Itoa(i)
		switch {
		case seen[p] > 1:
			t.Fatalf("%s reached the broker %d times", p, seen[p])
		case o.gone && seen[p] != 0:
			t.Fatalf("%s was answered 'never sent' (%v) and reached the broker", p, o.err)
		case o.err == nil && (o.res.MessageID != "m-"+p || seen[p] != 1):
			t.Fatalf("%s answered %+v, sent %d times", p, o.res, seen[p])
		case o.err != nil && !o.gone && !o.unknown:
			t.Fatalf("%s: unexpected error %v", p, o.err)
		}
	}
}

// idle waits until b has no call in flight and nothing queued.
func idle(t *testing.T, b *pushBatcher) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		busy, q := b.busy, len(b.queue)
		b.mu.Unlock()
		if busy == 0 && q == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after every push ended: %d calls busy, %d queued", busy, q)
		}
		time.Sleep(time.Millisecond)
	}
}
