package conformance

import (
	"fmt"
	"github.com/queen-mq/gate/libs/capability"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// §12.22 — status-code discipline: verdicts 200, push 201, malformed 400,
// only infrastructure 5xx.

func TestSemantic22_VerdictsAre200PushIs201MalformedIs400(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1})
	m := c.Messages[0]
	if e.has(t, capability.KV) {
		e.kv1(t, e.incr("full", 5, queen.IncrOpts{TTLSeconds: 600}))
	}
	empty := e.Queue("empty")
	e.configure(t, empty, queen.QueueOptions{})

	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"push", http.MethodPost, "/api/v1/push", fmt.Sprintf(`{"items":[{"queue":%q,"payload":{"n":2}}]}`, q), http.StatusCreated},
		{"duplicate push", http.MethodPost, "/api/v1/push", fmt.Sprintf(`{"items":[{"queue":%q,"partition":"p","payload":1,"transactionId":"p-n1"}]}`, q), http.StatusCreated},
		{"empty push", http.MethodPost, "/api/v1/push", `{"items":[]}`, http.StatusCreated},
		{"unparsable push", http.MethodPost, "/api/v1/push", `{"items":`, http.StatusBadRequest},
		{"refused incr", http.MethodPost, "/api/v1/kv", fmt.Sprintf(`{"operations":[{"op":"incr","ns":%q,"key":"full","delta":1,"max":5,"ttlSeconds":60}]}`, e.ns), http.StatusOK},
		{"lost required op", http.MethodPost, "/api/v1/kv", fmt.Sprintf(`{"operations":[{"op":"putIfAbsent","ns":%q,"key":"full","value":1,"ttlSeconds":60,"required":true}]}`, e.ns), http.StatusOK},
		{"unparsable kv", http.MethodPost, "/api/v1/kv", `{"operations":[`, http.StatusBadRequest},
		{"unknown kv op", http.MethodPost, "/api/v1/kv", fmt.Sprintf(`{"operations":[{"op":"frobnicate","ns":%q,"key":"k"}]}`, e.ns), http.StatusBadRequest},
		{"bad namespace", http.MethodPost, "/api/v1/kv", `{"operations":[{"op":"get","ns":"Upper","key":"k"}]}`, http.StatusBadRequest},
		{"kv get miss", http.MethodGet, "/api/v1/kv/" + e.ns + "/missing", "", http.StatusOK},
		{"kv query string", http.MethodGet, "/api/v1/kv/" + e.ns + "/k?x=1", "", http.StatusBadRequest},
		{"kv field in path body", http.MethodPut, "/api/v1/kv/" + e.ns + "/k", `{"op":"put","value":1,"ttlSeconds":5}`, http.StatusBadRequest},
		{"kv delete miss", http.MethodDelete, "/api/v1/kv/" + e.ns + "/missing", "", http.StatusOK},
		{"rolled-back transaction", http.MethodPost, "/api/v1/transaction", fmt.Sprintf(`{"operations":[{"type":"push","items":[{"queue":%q,"partition":"p","payload":1,"transactionId":"p-n1"}]}]}`, q), http.StatusOK},
		{"unparsable transaction", http.MethodPost, "/api/v1/transaction", `{"operations":`, http.StatusBadRequest},
		{"transaction without operations", http.MethodPost, "/api/v1/transaction", `{"requiredLeases":[]}`, http.StatusBadRequest},
		{"unknown transaction op", http.MethodPost, "/api/v1/transaction", `{"operations":[{"type":"teleport"}]}`, http.StatusBadRequest},
		{"rejected ack", http.MethodPost, "/api/v1/ack", fmt.Sprintf(`{"transactionId":%q,"partitionId":%q,"leaseId":%q,"consumerGroup":%q,"status":"completed"}`, m.TransactionID, m.PartitionID, queen.NewTransactionID(), g), http.StatusOK},
		{"extend unknown lease", http.MethodPost, "/api/v1/lease/" + queen.NewTransactionID() + "/extend", `{"seconds":5}`, http.StatusOK},
		{"empty pop", http.MethodGet, "/api/v1/pop/queue/" + empty + "?batch=1&subscriptionMode=all", "", http.StatusNoContent},
		{"unknown queue detail", http.MethodGet, "/api/v1/resources/queues/" + e.Queue("nope"), "", http.StatusNotFound},
		{"unknown queue depth", http.MethodGet, "/api/v1/resources/queues/" + e.Queue("nope") + "/depth", "", http.StatusNotFound},
		{"health", http.MethodGet, "/health", "", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.path, "/api/v1/kv") {
				e.needs(t, capability.KV)
			}
			r := e.raw(t, tc.method, tc.path, tc.body)
			if r.Status != tc.status {
				t.Errorf("%s %s → HTTP %d %s, want %d", tc.method, tc.path, r.Status, r.Body, tc.status)
			}
		})
	}
}

// §12.25 — timestamps.

var (
	// RFC 3339 with a fraction and an explicit offset (Z or ±hh:mm).
	kvInstant = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+(Z|[+-]\d{2}:\d{2})$`)
	// UTC with Z, milliseconds or microseconds.
	createdAt = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(\d{3})?Z$`)
)

func TestSemantic25_ExpiresAtIsRFC3339WithOffsetAndCreatedAtIsUTCZ(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	body := fmt.Sprintf(`{"operations":[
		{"op":"put","ns":%[1]q,"key":"t","value":1,"ttlSeconds":100},
		{"op":"put","ns":%[1]q,"key":"f","value":1,"forever":true},
		{"op":"getMany","ns":%[1]q,"keys":["f","t"]}]}`, e.ns)
	v := e.rawJSON(t, http.MethodPost, "/api/v1/kv", body, http.StatusOK)
	rows := obj(t, v, "results", 2, "rows").([]any)
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	if x := obj(t, rows[0], "expiresAt"); x != nil {
		t.Errorf("forever key expiresAt = %v, want null", x)
	}
	exp, _ := obj(t, rows[1], "expiresAt").(string)
	upd, _ := obj(t, rows[1], "updatedAt").(string)
	for name, s := range map[string]string{"expiresAt": exp, "updatedAt": upd} {
		if !kvInstant.MatchString(s) {
			t.Errorf("%s %q is not RFC 3339 with a fraction and an offset", name, s)
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			t.Errorf("%s %q: %v", name, s, err)
		}
	}
	te, _ := time.Parse(time.RFC3339Nano, exp)
	tu, _ := time.Parse(time.RFC3339Nano, upd)
	if d := te.Sub(tu); d < 99*time.Second || d > 101*time.Second {
		t.Errorf("expiresAt − updatedAt = %v, want ≈ 100s", d)
	}
	g := e.rawJSON(t, http.MethodGet, "/api/v1/kv/"+e.ns+"/t", "", http.StatusOK)
	if s, _ := obj(t, g, "expiresAt").(string); !kvInstant.MatchString(s) {
		t.Errorf("path-route get expiresAt %q is not RFC 3339 with a fraction and an offset", s)
	}

	q := e.Queue("in")
	e.push(t, q, "p", msg(1))
	p := e.rawJSON(t, http.MethodGet, "/api/v1/pop/queue/"+q+"?batch=1&subscriptionMode=all&consumerGroup="+e.Group("g"), "", http.StatusOK)
	ca, _ := obj(t, p, "messages", 0, "createdAt").(string)
	if !createdAt.MatchString(ca) {
		t.Errorf("message createdAt %q, want UTC YYYY-MM-DDTHH:MM:SS.fff(fff)Z", ca)
	}
}
