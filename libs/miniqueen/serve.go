package miniqueen

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The broker serves HTTP/1.1 with a server of its own rather than
// net/http's: an idle fleet's calls are small requests (a pop without
// wait, a long-poll answered at its timeout, a kv row) and at 10,000
// graphs net/http's work around each of them was most of the broker's
// idle CPU. The handlers are the same http.Handler (the mux of Handler);
// what changes is the connection's loop:
//
//   - A request's context is its connection's, and watching for the client
//     leaving starts only when a handler asks for Done (a parked long-poll,
//     a hung route); that read then goes on as the read of the next
//     request. net/http starts a read goroutine for every request and
//     stops it with two deadline changes when the handler returns, though
//     only a parked poll ever looks.
//   - No read deadline is set or cleared per request (net/http sets one
//     for the header timeout and clears it on every request).
//   - The answer's header and body leave in one write; the header map is
//     the connection's, cleared after each answer.
//
// What the wire shows is net/http's: the status line, Content-Length,
// Content-Type (sniffed when a handler sets none), Date, no body on HEAD,
// 204 and 304, Connection: close when either side closes, keep-alive for
// HTTP/1.0 clients that ask for it, "100 Continue" before a body a client
// waits to send, 400 for a request that does not parse. Chunked request
// bodies are read; answers always carry a length.

// leanServer serves one listener's connections until shut down.
type leanServer struct {
	h      http.Handler
	logger *slog.Logger

	// closing is set once, by shutdown, before it looks for idle
	// connections; a connection marks itself idle before it checks
	// closing, so one of the two sees the other without a lock per
	// request.
	closing atomic.Bool

	mu       sync.Mutex
	conns    map[*leanConn]struct{}
	draining chan struct{} // closed when the last connection is gone while closing
	wg       sync.WaitGroup
}

func newLeanServer(h http.Handler, logger *slog.Logger) *leanServer {
	return &leanServer{h: h, logger: logger, conns: map[*leanConn]struct{}{}}
}

// serve accepts until shutdown closes ln; it returns nil then, and the
// accept error otherwise. A failed accept that is not the listener's end
// (out of file descriptors, a connection reset before it was accepted) is
// waited out and tried again, as net/http does.
func (l *leanServer) serve(ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !l.alive() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := newLeanConn(l, nc)
		l.mu.Lock()
		if l.closing.Load() {
			l.mu.Unlock()
			_ = nc.Close()
			continue
		}
		l.conns[c] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go c.serve()
	}
}

// shutdown closes ln, closes the idle connections at once, lets the
// answers in flight finish for up to grace, then closes every connection
// and waits for their goroutines.
func (l *leanServer) shutdown(ln net.Listener, grace time.Duration) {
	l.closing.Store(true)
	l.mu.Lock()
	_ = ln.Close()
	l.draining = make(chan struct{})
	for c := range l.conns {
		if c.idle.Load() {
			_ = c.nc.Close()
		}
	}
	if len(l.conns) == 0 {
		close(l.draining)
	}
	drained := l.draining
	l.mu.Unlock()
	t := time.NewTimer(grace)
	select {
	case <-drained:
	case <-t.C:
	}
	t.Stop()
	l.mu.Lock()
	for c := range l.conns {
		_ = c.nc.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// leave removes c; the last connection to leave while closing ends the
// drain.
func (l *leanServer) leave(c *leanConn) {
	l.mu.Lock()
	delete(l.conns, c)
	if l.closing.Load() && len(l.conns) == 0 && l.draining != nil {
		select {
		case <-l.draining:
		default:
			close(l.draining)
		}
	}
	l.mu.Unlock()
	l.wg.Done()
}

// setIdle marks c as waiting for its next request (or not) and reports
// false when the server is closing: an idle connection then ends.
func (l *leanServer) setIdle(c *leanConn, idle bool) bool {
	c.idle.Store(idle)
	return !l.closing.Load()
}

// leanConn is one client connection. It is also every request's context
// on it: Done starts the watch for the client leaving, which a canceled
// context then reports.
type leanConn struct {
	l      *leanServer
	nc     net.Conn
	remote string
	br     *bufio.Reader
	bw     *bufio.Writer
	header http.Header // the answer's header, cleared after each answer

	idle atomic.Bool // waiting for its next request

	// mu guards the watch: whether a read for the client leaving is in
	// flight, and what it found.
	mu        sync.Mutex
	inHandler bool          // a handler runs and may ask for Done
	watchable bool          // the request's body is read to its end (or there is none)
	watching  bool          // the watch read is in flight
	watched   chan struct{} // closed when the watch read returns
	gone      atomic.Bool   // the client left; done is closed
	done      chan struct{}
	hasByte   bool // the watch read a byte of the next request
	byteBuf   [1]byte
}

func newLeanConn(l *leanServer, nc net.Conn) *leanConn {
	c := &leanConn{l: l, nc: nc, remote: nc.RemoteAddr().String(), header: http.Header{}, done: make(chan struct{})}
	c.br = bufio.NewReaderSize(connReader{c}, 4096)
	c.bw = bufio.NewWriterSize(nc, 4096)
	return c
}

// connReader reads the connection for the request parser, the byte the
// watch read first.
type connReader struct{ c *leanConn }

func (r connReader) Read(p []byte) (int, error) {
	c := r.c
	if c.hasByte && len(p) > 0 {
		p[0] = c.byteBuf[0]
		c.hasByte = false
		return 1, nil
	}
	return c.nc.Read(p)
}

// The context methods: a request's context is its connection's.

func (c *leanConn) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *leanConn) Value(any) any               { return nil }

func (c *leanConn) Err() error {
	if c.gone.Load() {
		return context.Canceled
	}
	return nil
}

// Done is closed when the client has left. Asked while a handler runs
// and the request is read whole, it starts one read on the connection
// that returns when the client closes it (or sends its next request, a
// byte the parser then gets first).
func (c *leanConn) Done() <-chan struct{} {
	c.mu.Lock()
	if c.inHandler && c.watchable && !c.watching && !c.gone.Load() && !c.hasByte && c.br.Buffered() == 0 {
		c.watching = true
		c.watched = make(chan struct{})
		go c.watch()
	}
	c.mu.Unlock()
	return c.done
}

func (c *leanConn) watch() {
	n, err := c.nc.Read(c.byteBuf[:])
	c.mu.Lock()
	if n == 1 {
		c.hasByte = true
	} else if err != nil {
		c.leftLocked()
	}
	c.watching = false
	close(c.watched)
	c.mu.Unlock()
}

// leftLocked notes that the client left (c.mu held).
func (c *leanConn) leftLocked() {
	if c.gone.CompareAndSwap(false, true) {
		close(c.done)
	}
}

// endWatch notes that the handler returned. A watch read in flight is
// left to run: it is the read of the next request's first byte (or of the
// client's end), which the serve loop waits for (awaitWatch), so a parked
// poll's answer costs no deadline changes to stop it.
func (c *leanConn) endWatch() {
	c.mu.Lock()
	c.inHandler = false
	c.mu.Unlock()
}

// awaitWatch waits for a watch read in flight to return.
func (c *leanConn) awaitWatch() {
	c.mu.Lock()
	watching, ch := c.watching, c.watched
	c.mu.Unlock()
	if watching {
		<-ch
	}
}

func (c *leanConn) serve() {
	defer func() {
		c.mu.Lock()
		c.leftLocked()
		c.mu.Unlock()
		_ = c.nc.Close()
		c.awaitWatch()
		c.l.leave(c)
	}()
	for {
		if !c.l.setIdle(c, true) {
			return
		}
		// Wait for the request's first byte as an idle connection (closed
		// at once by a shutdown), then read it as an active one. After a
		// parked poll the watch read is that first read.
		c.awaitWatch()
		if c.gone.Load() {
			return
		}
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		if !c.l.setIdle(c, false) {
			return
		}
		req, err := http.ReadRequest(c.br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				_, _ = io.WriteString(c.nc, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request")
			}
			return
		}
		if !c.serveOne(req) {
			return
		}
	}
}

// serveOne runs the handler for req and writes its answer; it reports
// whether the connection goes on.
func (c *leanConn) serveOne(req *http.Request) (keep bool) {
	req.RemoteAddr = c.remote
	req = req.WithContext(c)
	if req.ProtoAtLeast(1, 1) && req.Body != http.NoBody && req.Header.Get("Expect") != "" {
		if !headerHas(req.Header, "Expect", "100-continue") {
			c.writeQuick(http.StatusExpectationFailed)
			return false
		}
		_, _ = c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if c.bw.Flush() != nil {
			return false
		}
	}
	w := &leanResponse{c: c, req: req, h: c.header}
	c.mu.Lock()
	c.inHandler = true
	c.watchable = req.Body == http.NoBody
	c.mu.Unlock()
	panicked := true
	func() {
		defer func() {
			if panicked {
				if p := recover(); p != nil && p != http.ErrAbortHandler {
					c.l.logger.Error("miniqueen: handler panic", "route", req.Method+" "+req.URL.Path, "error", p, "stack", string(debug.Stack()))
				}
			}
		}()
		c.l.h.ServeHTTP(w, req)
		panicked = false
	}()
	c.endWatch()
	if panicked || c.gone.Load() {
		return false
	}
	keep = !req.Close
	// What the handler left of the body is read and dropped, as net/http
	// does, up to 256 KiB; more than that closes the connection.
	if req.Body != http.NoBody {
		n, err := io.CopyN(io.Discard, req.Body, 256<<10+1)
		if n > 256<<10 || err != nil && !errors.Is(err, io.EOF) {
			keep = false
		}
		_ = req.Body.Close()
	}
	w.closing = !keep
	if !w.finish() {
		return false
	}
	clear(c.header)
	return keep && c.l.alive()
}

// alive reports whether the server still serves (not shutting down).
func (l *leanServer) alive() bool { return !l.closing.Load() }

func (c *leanConn) writeQuick(status int) {
	_, _ = c.bw.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	_ = c.bw.Flush()
}

// headerHas reports whether one of key's comma-separated values is token
// (case-insensitive).
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for len(v) > 0 {
			var part string
			part, v, _ = cutComma(v)
			if asciiEqualFold(trimOWS(part), token) {
				return true
			}
		}
	}
	return false
}

func cutComma(s string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// leanResponse is a handler's http.ResponseWriter: the body is kept until
// the handler returns, then the answer leaves in one write.
type leanResponse struct {
	c       *leanConn
	req     *http.Request
	h       http.Header
	status  int
	body    *jw // from bufPool; nil until the first Write
	closing bool
}

func (w *leanResponse) Header() http.Header { return w.h }

func (w *leanResponse) WriteHeader(code int) {
	if w.status != 0 || code < 200 {
		// A repeated WriteHeader is ignored, as net/http does (it logs);
		// no handler here sends informational answers.
		return
	}
	w.status = code
}

func (w *leanResponse) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.body == nil {
		w.body = getJW()
	}
	w.body.b = append(w.body.b, p...)
	return len(p), nil
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// finish writes the answer; false when the connection failed.
func (w *leanResponse) finish() bool {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var body []byte
	if w.body != nil {
		body = w.body.b
		defer putJW(w.body)
	}
	bw := w.c.bw
	h := w.h
	var line [64]byte
	b := append(line[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	if t := http.StatusText(w.status); t != "" {
		b = append(b, t...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(w.status), 10)
	}
	b = append(b, "\r\n"...)
	_, _ = bw.Write(b)
	if bodyAllowed(w.status) {
		if _, ok := h["Content-Length"]; !ok {
			h["Content-Length"] = []string{strconv.Itoa(len(body))}
		}
		if _, ok := h["Content-Type"]; !ok && len(body) > 0 {
			h["Content-Type"] = []string{http.DetectContentType(body)}
		}
	} else {
		delete(h, "Content-Length")
		body = nil
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = dateHeader()
	}
	if w.closing && w.req.ProtoAtLeast(1, 1) {
		h["Connection"] = connClose
	} else if !w.closing && !w.req.ProtoAtLeast(1, 1) {
		h["Connection"] = connKeepAlive
	}
	if err := h.Write(bw); err != nil {
		return false
	}
	_, _ = bw.WriteString("\r\n")
	if w.req.Method != http.MethodHead {
		_, _ = bw.Write(body)
	}
	return bw.Flush() == nil
}

var (
	connClose     = []string{"close"}
	connKeepAlive = []string{"keep-alive"}
)

// dateHeader answers the Date value for now, rendered once a second.
func dateHeader() []string {
	now := time.Now().Unix()
	if d := lastDate.Load(); d != nil && d.at == now {
		return d.v
	}
	d := &dated{at: now, v: []string{time.Unix(now, 0).UTC().Format(http.TimeFormat)}}
	lastDate.Store(d)
	return d.v
}

type dated struct {
	at int64
	v  []string
}

var lastDate atomic.Pointer[dated]
