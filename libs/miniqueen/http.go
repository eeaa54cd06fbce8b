package miniqueen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

const maxBody = 64 << 20

// Handler returns the broker's HTTP handler (what Start serves), for tests
// that want to mount it themselves.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern, route string, fn http.HandlerFunc) {
		mux.Handle(pattern, s.calls.count(pattern, route, s.guard(route, fn)))
	}
	h("GET /health", RouteHealth, s.handleHealth)
	h("GET /status", RouteHealth, s.handleStatus)
	h("GET /metrics", RouteHealth, s.handleMetrics)
	h("GET /metrics/prometheus", RouteHealth, s.handlePrometheus)

	h("POST /api/v1/configure", RouteConfigure, s.handleConfigure)
	h("POST /api/v1/push", RoutePush, s.handlePush)
	h("GET /api/v1/pop", RoutePop, s.handlePopDiscovery)
	h("GET /api/v1/pop/queue/{queue}", RoutePop, s.handlePop)
	h("GET /api/v1/pop/queue/{queue}/partition/{partition}", RoutePop, s.handlePop)
	h("POST /api/v1/ack", RouteAck, s.handleAck)
	h("POST /api/v1/ack/batch", RouteAck, s.handleAckBatch)
	h("POST /api/v1/lease/{leaseId}/extend", RouteLease, s.handleLeaseExtend)
	h("POST /api/v1/transaction", RouteTransaction, s.handleTransaction)

	h("POST /api/v1/kv", RouteKV, s.handleKVBatch)
	h("GET /api/v1/kv/{ns}/{key...}", RouteKV, s.handleKVGet)
	h("PUT /api/v1/kv/{ns}/{key...}", RouteKV, s.handleKVPut)
	h("DELETE /api/v1/kv/{ns}/{key...}", RouteKV, s.handleKVDelete)

	h("GET /api/v1/resources/queues", RouteQueues, s.handleQueueList)
	h("GET /api/v1/resources/queues/{queue}", RouteQueues, s.handleQueueDetail)
	h("DELETE /api/v1/resources/queues/{queue}", RouteQueues, s.handleQueueDelete)
	h("GET /api/v1/resources/queues/{queue}/depth", RouteDepth, s.handleDepth)

	h("GET /api/v1/consumer-groups", RouteConsumerGroups, s.handleGroupList)
	h("GET /api/v1/consumer-groups/lagging", RouteConsumerGroups, s.handleGroupLagging)
	h("GET /api/v1/consumer-groups/{group}", RouteConsumerGroups, s.handleGroupDetail)
	h("DELETE /api/v1/consumer-groups/{group}", RouteConsumerGroups, s.handleGroupDelete)
	h("DELETE /api/v1/consumer-groups/{group}/queues/{queue}", RouteConsumerGroups, s.handleGroupDelete)
	h("POST /api/v1/consumer-groups/{group}/queues/{queue}/seek", RouteConsumerGroups, s.handleSeek)
	h("POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", RouteConsumerGroups, s.handleSeek)
	h("POST /api/v1/consumer-groups/{group}/subscription", RouteConsumerGroups, s.handleSubscription)

	h("GET /api/v1/dlq", RouteDLQ, s.handleDLQ)

	mux.HandleFunc("/", noSuchRoute)
	return mux
}

// guard answers injected faults before the real handler runs.
func (s *Server) guard(route string, fn http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hold(route, r) {
			return
		}
		if route == RouteKV && s.kvAbsent.Load() || route == RouteDepth && s.depthAbsent.Load() {
			noSuchRoute(w, r)
			return
		}
		if m := *s.faults.Load(); len(m) > 0 {
			if status, ok := m[route]; ok {
				if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
					w.Header().Set("Retry-After", "1")
				}
				writeJSON(w, status, map[string]string{
					"error":  "injected_fault",
					"reason": route,
					"detail": fmt.Sprintf("miniqueen SetError(%q, %d)", route, status),
				})
				return
			}
		}
		fn(w, r)
	})
}

var bufPool = sync.Pool{New: func() any { return &jw{b: make([]byte, 0, 4096)} }}

func getJW() *jw {
	w := bufPool.Get().(*jw)
	w.b = w.b[:0]
	return w
}

func putJW(w *jw) {
	if cap(w.b) <= 4<<20 {
		bufPool.Put(w)
	}
}

// jsonType is every JSON answer's Content-Type value, shared: net/http
// only reads it, and setting the canonical key directly skips Set's
// canonicalising and a slice per answer.
var jsonType = []string{"application/json"}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonType
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":"encoding response"}`)
		status = http.StatusInternalServerError
	}
	writeRaw(w, status, b)
}

func badRequest(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf(format, args...)})
}

var readBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads the whole request body (up to maxBody). The returned
// release function recycles the buffer; the bytes are invalid after it.
func readBody(r *http.Request) ([]byte, func(), error) {
	buf := readBufPool.Get().(*bytes.Buffer)
	buf.Reset()
	if r.ContentLength > 0 && r.ContentLength < maxBody {
		buf.Grow(int(r.ContentLength) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxBody+1))
	release := func() {
		if buf.Cap() <= 8<<20 {
			readBufPool.Put(buf)
		}
	}
	if err != nil {
		release()
		return nil, func() {}, err
	}
	if buf.Len() > maxBody {
		release()
		return nil, func() {}, errors.New("body larger than 64 MiB")
	}
	return buf.Bytes(), release, nil
}

// decodeBody decodes a JSON body into v; an empty body is an error unless
// allowEmpty.
func decodeBody(r *http.Request, v any, allowEmpty bool) error {
	b, release, err := readBody(r)
	if err != nil {
		return err
	}
	defer release()
	if len(bytes.TrimSpace(b)) == 0 {
		if allowEmpty {
			return nil
		}
		return errors.New("empty body, expected a JSON object")
	}
	return json.Unmarshal(b, v)
}
