package stage

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/gatetest/logsink"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

func TestWedgeEscalatesOncePerHeadAfterFiveAckRejections(t *testing.T) {
	t.Parallel()
	c, _ := queen.New("http://127.0.0.1:1")
	var logs logsink.Sink
	s, err := New(Config{App: "a", Graph: "g", Stage: plan.Stage{Path: "p", Node: "n", Source: "q", Group: "grp"},
		Node: &plan.Node{Name: "n"}, Client: c, Limiter: &budget.Limiter{}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	head := func(txn string) *handler {
		return &handler{s: s, msgs: []queen.Message{{TransactionID: txn, Partition: "p7"}}, window: []entry{{msg: &queen.Message{TransactionID: txn, Partition: "p7"}}}}
	}
	rejected := &queen.Refusal{Reason: queen.ReasonAckRejected, Message: `QTXN ack failed for partition x group "grp": unknown transactionId; transaction rolled back`}
	for i := 0; i < 7; i++ {
		head("t1").failed(1, rejected)
	}
	st := s.Status()
	if st.Counters.Wedged != 1 || st.Wedge == nil || !st.Wedge.Escalated || st.Wedge.Attempts != 7 || st.Wedge.Head != "t1" {
		t.Fatalf("after 7 rejections at one head: wedged %d, record %+v", st.Counters.Wedged, st.Wedge)
	}
	if n := strings.Count(logs.String(), `"level":"ERROR"`); n != 1 {
		t.Fatalf("%d ERROR lines, want exactly one", n)
	}
	if !strings.Contains(logs.String(), `/api/v1/consumer-groups/grp/queues/q/seek`) || !strings.Contains(logs.String(), `toEnd`) {
		t.Fatalf("the ERROR must name the seek that fixes it: %s", logs.String())
	}
	for i := 0; i < 6; i++ {
		head("t2").failed(1, errors.New("queen: POST /api/v1/transaction: connection reset by peer"))
	}
	if st := s.Status(); st.Counters.Wedged != 1 || st.Wedge.Head != "t2" || st.Wedge.Escalated {
		t.Fatalf("transport failures at a new head must not escalate: %+v %+v", st.Counters, st.Wedge)
	}
	head("t2").committed(0, 1, 0, 1, nil)
	if st := s.Status(); st.Wedge != nil {
		t.Fatalf("a commit must clear the wedge record: %+v", st.Wedge)
	}
}
