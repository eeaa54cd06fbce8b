package push

import (
	"net/http"
	"sync/atomic"

	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// inflight bounds the request bytes the push routes buffer at once
// (GATE_PUSH_INFLIGHT_BYTES): a push reserves its Content-Length (the
// route's limit when the length is not announced) before reading a byte,
// and a push that does not fit is answered 503 with Retry-After instead of
// growing the process.
type inflight struct {
	limit int64
	used  atomic.Int64
}

// reserve takes room for one body of n bytes (limit when n is unknown or
// above it); the caller runs release when the request is answered.
func (f *inflight) reserve(n, limit int64) (release func(), bad *httpapi.Refusal) {
	if n <= 0 || n > limit {
		n = limit
	}
	if f.limit <= 0 {
		return func() {}, nil
	}
	for {
		cur := f.used.Load()
		if cur+n > f.limit && cur > 0 {
			return nil, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodePushInflightFull, "gate-api is buffering %d bytes of pushes already, and this one (%d bytes) would pass GATE_PUSH_INFLIGHT_BYTES (%d): retry after 1 second, or send smaller bodies; nothing was read or queued", cur, n, f.limit).
				InflightBytes(cur).Limit(f.limit).RetryAfter(1)
		}
		if f.used.CompareAndSwap(cur, cur+n) {
			return func() { f.used.Add(-n) }, nil
		}
	}
}
