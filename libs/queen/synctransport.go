package queen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SyncTransport is an http.RoundTripper for plain-HTTP/1.1 calls to a
// broker that writes each request and reads its answer on the calling
// goroutine, over keep-alive connections of its own pool.
//
// http.Transport gives every connection a reader and a writer goroutine
// and hands each call to both and back: a relay spread over a thousand
// graphs makes two calls per one-item claim, and those hand-offs, with the
// stacks of two goroutines per parked long-poll for the GC to scan, were
// the largest part of what a claim cost the relay (docs/benchmarks.md,
// "The relay's cost per broker call"). Here a call is one write of the
// whole request (head and body) and the answer is read by the caller; a
// connection whose answer was read to its end goes back to the pool.
//
// What it does not serve it hands to Fallback: https, a URL the fallback's
// proxy function proxies, a body of unknown length. A context that ends
// mid-call closes the call's connection. A request is sent again on a new
// connection only when it cannot have reached the broker: writing it to a
// pooled connection failed, or a pooled connection was closed by the
// broker before the call (each one is checked, without blocking, before
// it is used). The zero value is not usable; build one with
// NewSyncTransport.
type SyncTransport struct {
	// Fallback serves the requests SyncTransport does not; its dial
	// timeouts and idle limits are also this transport's.
	Fallback *http.Transport

	dialer  net.Dialer
	maxIdle int
	idleFor time.Duration

	mu   sync.Mutex
	idle map[string][]*syncConn
}

// NewSyncTransport returns a SyncTransport that keeps up to fallback's
// MaxIdleConnsPerHost idle connections per broker (2 when unset) for up
// to its IdleConnTimeout (90 s when unset), dials with a 10 s timeout and
// 30 s TCP keep-alives, and hands what it does not serve to fallback (nil:
// NewTransport()).
func NewSyncTransport(fallback *http.Transport) *SyncTransport {
	if fallback == nil {
		fallback = NewTransport()
	}
	t := &SyncTransport{
		Fallback: fallback,
		dialer:   net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:  fallback.MaxIdleConnsPerHost,
		idleFor:  fallback.IdleConnTimeout,
		idle:     map[string][]*syncConn{},
	}
	if t.maxIdle <= 0 {
		t.maxIdle = http.DefaultMaxIdleConnsPerHost
	}
	if t.idleFor <= 0 {
		t.idleFor = 90 * time.Second
	}
	return t
}

// syncConn is one pooled connection.
type syncConn struct {
	nc net.Conn
	br *bufio.Reader
	// wbuf holds the request being written (head and body), reused.
	wbuf []byte
	// since is when it went idle.
	since time.Time
}

// maxKeptWriteBuf is the largest request buffer a connection keeps for
// its next request; a larger one is let go after its call.
const maxKeptWriteBuf = 64 << 10

// CloseIdleConnections closes every idle connection, the fallback's too.
func (t *SyncTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*syncConn{}
	t.mu.Unlock()
	for _, conns := range idle {
		for _, cc := range conns {
			cc.nc.Close()
		}
	}
	t.Fallback.CloseIdleConnections()
}

// serves reports whether the request is one SyncTransport sends itself.
func (t *SyncTransport) serves(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		return false
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody && req.ContentLength <= 0 || !hasBody && req.ContentLength > 0 {
		return false
	}
	if t.Fallback.Proxy != nil {
		if p, err := t.Fallback.Proxy(req); err != nil || p != nil {
			return false
		}
	}
	return true
}

// RoundTrip sends req and returns the answer; its Body must be read to
// its end and closed for the connection to serve another call.
func (t *SyncTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.serves(req) {
		return t.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	for {
		cc, pooled, err := t.conn(ctx, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, retry, err := t.exchange(ctx, cc, req, pooled, addr)
		if err == nil {
			return resp, nil
		}
		if !retry {
			closeBody(req)
			return nil, err
		}
		// The request did not reach the broker: rewind its body and send
		// it on a connection of its own.
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			r2 := *req
			r2.Body = body
			req = &r2
		}
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// conn returns a live pooled connection to addr (pooled true), or a new
// one.
func (t *SyncTransport) conn(ctx context.Context, addr string) (*syncConn, bool, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		conns := t.idle[addr]
		// The oldest idle connections are the ones past the idle limit.
		drop := 0
		for drop < len(conns) && now.Sub(conns[drop].since) > t.idleFor {
			drop++
		}
		var stale []*syncConn
		if drop > 0 {
			stale = append(stale, conns[:drop]...)
			n := copy(conns, conns[drop:])
			clear(conns[n:])
			conns = conns[:n]
		}
		var cc *syncConn
		if n := len(conns); n > 0 {
			cc = conns[n-1]
			conns[n-1] = nil
			conns = conns[:n-1]
		}
		t.idle[addr] = conns
		t.mu.Unlock()
		for _, s := range stale {
			s.nc.Close()
		}
		if cc == nil {
			break
		}
		if alive(cc.nc) {
			return cc, true, nil
		}
		cc.nc.Close()
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	return &syncConn{nc: nc, br: bufio.NewReaderSize(nc, transportBufferSize)}, false, nil
}

// put returns an idle connection to the pool, closing it when the pool
// is full.
func (t *SyncTransport) put(addr string, cc *syncConn) {
	if cap(cc.wbuf) > maxKeptWriteBuf {
		cc.wbuf = nil
	}
	cc.since = time.Now()
	t.mu.Lock()
	if len(t.idle[addr]) >= t.maxIdle {
		t.mu.Unlock()
		cc.nc.Close()
		return
	}
	t.idle[addr] = append(t.idle[addr], cc)
	t.mu.Unlock()
}

// ended is err under the call context's own error when the context ended
// (what made the call fail).
func ended(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// exchange writes req on cc and reads the answer's head. retry is true
// when the request cannot have reached the broker and may be sent again.
func (t *SyncTransport) exchange(ctx context.Context, cc *syncConn, req *http.Request, pooled bool, addr string) (_ *http.Response, retry bool, _ error) {
	stop := context.AfterFunc(ctx, func() { cc.nc.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error, retry bool) (*http.Response, bool, error) {
		stop()
		cc.nc.Close()
		return nil, retry && ctx.Err() == nil, ended(ctx, err)
	}
	b, err := appendRequest(cc.wbuf[:0], req)
	if err != nil {
		return fail(err, false)
	}
	cc.wbuf = b
	if _, err := cc.nc.Write(b); err != nil {
		// Nothing a broker acts on was delivered: a request reaches it
		// whole or not at all.
		return fail(err, pooled)
	}
	resp, err := http.ReadResponse(cc.br, req)
	if err != nil {
		// A pooled connection the broker closed as the request arrived
		// answers nothing at all: only an idempotent request is sent
		// again (the broker may have acted on the other kinds).
		idem := req.Method == http.MethodGet || req.Method == http.MethodHead
		return fail(err, pooled && idem && errors.Is(err, io.EOF))
	}
	resp.Body = &syncBody{t: t, cc: cc, addr: addr, body: resp.Body, stop: stop, keep: !resp.Close, ctx: ctx}
	return resp, false, nil
}

// appendRequest appends req's HTTP/1.1 head and body to b.
func appendRequest(b []byte, req *http.Request) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	for k, vs := range req.Header {
		for _, v := range vs {
			if strings.ContainsAny(k, "\r\n:") || strings.ContainsAny(v, "\r\n") {
				return b, fmt.Errorf("header %q carries a line break or a colon; send it without", k)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	hasBody := req.Body != nil && req.Body != http.NoBody && req.ContentLength > 0
	if hasBody || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, max(req.ContentLength, 0), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	if !hasBody {
		return b, nil
	}
	n := int(req.ContentLength)
	start := len(b)
	if cap(b)-start < n {
		grown := make([]byte, start, start+n)
		copy(grown, b)
		b = grown
	}
	b = b[:start+n]
	_, err := io.ReadFull(req.Body, b[start:])
	req.Body.Close()
	if err != nil {
		return b, fmt.Errorf("reading the request body (%d bytes declared): %w", n, err)
	}
	return b, nil
}

// syncBody is an answer's body: read to its end and closed, its
// connection goes back to the pool.
type syncBody struct {
	t    *SyncTransport
	cc   *syncConn
	addr string
	body io.ReadCloser
	stop func() bool
	ctx  context.Context
	// keep is false when the answer said Connection: close.
	keep bool
	eof  bool
	done bool
}

func (b *syncBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("read on a closed answer body")
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		err = ended(b.ctx, err)
	}
	return n, err
}

// Close ends the call: a connection whose answer was read to its end,
// with no byte after it and the call's context still live, serves the
// next call; any other is closed.
func (b *syncBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	b.body.Close()
	live := b.stop()
	if b.eof && b.keep && live && b.cc.br.Buffered() == 0 {
		b.t.put(b.addr, b.cc)
		return nil
	}
	return b.cc.nc.Close()
}
