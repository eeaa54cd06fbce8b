package miniqueen

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawConn is one hand-written HTTP/1.x conversation with the broker.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatalf("dialing the broker: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("writing %q: %v", s, err)
	}
}

// answer reads one answer to a request of method and its whole body.
func (r *rawConn) answer(method string) (*http.Response, string) {
	r.t.Helper()
	resp, err := http.ReadResponse(r.br, &http.Request{Method: method})
	if err != nil {
		r.t.Fatalf("reading the answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("reading the answer's body: %v", err)
	}
	return resp, string(b)
}

// closed reports whether the broker closed the connection (nothing more
// to read).
func (r *rawConn) closed() bool {
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := r.br.ReadByte()
	return err == io.EOF
}

func TestTheServerAnswersHTTP11AsNetHTTPDoes(t *testing.T) {
	t.Parallel()
	s := RunT(t)
	const health = "GET /health HTTP/1.1\r\nHost: mq\r\n\r\n"

	t.Run("HEAD carries the length and no body", func(t *testing.T) {
		r := dialRaw(t, s)
		r.send("HEAD /health HTTP/1.1\r\nHost: mq\r\n\r\n" + health)
		head, body := r.answer(http.MethodHead)
		if head.StatusCode != 200 || head.ContentLength <= 0 || body != "" {
			t.Fatalf("HEAD answered %d, length %d, body %q; want 200, the GET's length, no body", head.StatusCode, head.ContentLength, body)
		}
		get, body := r.answer(http.MethodGet)
		if get.StatusCode != 200 || int64(len(body)) != head.ContentLength || !strings.Contains(body, `"status"`) {
			t.Fatalf("the GET after the HEAD answered %d with %q (length %d); want 200 with the health document of the HEAD's length %d", get.StatusCode, body, len(body), head.ContentLength)
		}
		if ct := get.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q, want application/json", ct)
		}
		if _, err := http.ParseTime(get.Header.Get("Date")); err != nil {
			t.Fatalf("Date %q does not parse: %v", get.Header.Get("Date"), err)
		}
	})

	t.Run("pipelined requests are answered in order", func(t *testing.T) {
		r := dialRaw(t, s)
		r.send("GET /api/v1/kv/gate/nothing HTTP/1.1\r\nHost: mq\r\n\r\n" + health)
		first, body := r.answer(http.MethodGet)
		if first.StatusCode != 200 || !strings.Contains(body, `"found":false`) {
			t.Fatalf("first answer %d %q, want the kv get's 200 with found false", first.StatusCode, body)
		}
		second, body := r.answer(http.MethodGet)
		if second.StatusCode != 200 || !strings.Contains(body, `"status"`) {
			t.Fatalf("second answer %d %q, want the health document", second.StatusCode, body)
		}
	})

	t.Run("a chunked body is read", func(t *testing.T) {
		r := dialRaw(t, s)
		doc := `{"value":{"a":1},"forever":true}`
		r.send("PUT /api/v1/kv/gate/chunked HTTP/1.1\r\nHost: mq\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"5\r\n" + doc[:5] + "\r\n" + strconv.FormatInt(int64(len(doc)-5), 16) + "\r\n" + doc[5:] + "\r\n0\r\n\r\n" + health)
		put, body := r.answer(http.MethodPut)
		if put.StatusCode != 200 {
			t.Fatalf("chunked PUT answered %d %q", put.StatusCode, body)
		}
		if e, ok := s.KV("gate", "chunked"); !ok || string(e.Value) != `{"a":1}` {
			t.Fatalf("stored %q (found %v), want {\"a\":1}", e.Value, ok)
		}
		if next, _ := r.answer(http.MethodGet); next.StatusCode != 200 {
			t.Fatalf("the request after the chunked body answered %d", next.StatusCode)
		}
	})

	t.Run("Expect 100-continue is answered before the body is sent", func(t *testing.T) {
		r := dialRaw(t, s)
		doc := `{"value":2,"forever":true}`
		r.send("PUT /api/v1/kv/gate/expect HTTP/1.1\r\nHost: mq\r\nExpect: 100-continue\r\nContent-Length: " + strconv.Itoa(len(doc)) + "\r\n\r\n")
		line, err := r.br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("first line %q (%v), want HTTP/1.1 100 Continue", line, err)
		}
		if blank, _ := r.br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("100 Continue followed by %q, want its blank line", blank)
		}
		r.send(doc)
		if put, body := r.answer(http.MethodPut); put.StatusCode != 200 {
			t.Fatalf("PUT after 100 Continue answered %d %q", put.StatusCode, body)
		}
	})

	t.Run("Connection close is honoured and said", func(t *testing.T) {
		r := dialRaw(t, s)
		r.send("GET /health HTTP/1.1\r\nHost: mq\r\nConnection: close\r\n\r\n")
		resp, _ := r.answer(http.MethodGet)
		if resp.StatusCode != 200 || !resp.Close {
			t.Fatalf("answered %d, close %v; want 200 with Connection: close", resp.StatusCode, resp.Close)
		}
		if !r.closed() {
			t.Fatal("the connection stayed open after Connection: close")
		}
	})

	t.Run("HTTP/1.0 closes unless it asks to keep alive", func(t *testing.T) {
		r := dialRaw(t, s)
		r.send("GET /health HTTP/1.0\r\n\r\n")
		if resp, _ := r.answer(http.MethodGet); resp.StatusCode != 200 {
			t.Fatalf("HTTP/1.0 answered %d", resp.StatusCode)
		}
		if !r.closed() {
			t.Fatal("an HTTP/1.0 connection without keep-alive stayed open")
		}
		k := dialRaw(t, s)
		k.send("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		resp, _ := k.answer(http.MethodGet)
		if resp.StatusCode != 200 || resp.Header.Get("Connection") != "keep-alive" {
			t.Fatalf("HTTP/1.0 keep-alive answered %d, Connection %q; want 200, keep-alive", resp.StatusCode, resp.Header.Get("Connection"))
		}
		k.send("GET /health HTTP/1.0\r\n\r\n")
		if again, _ := k.answer(http.MethodGet); again.StatusCode != 200 {
			t.Fatalf("the kept connection's second request answered %d", again.StatusCode)
		}
	})

	t.Run("a request that does not parse is a 400 and the end", func(t *testing.T) {
		r := dialRaw(t, s)
		r.send("THIS IS NOT HTTP\r\n\r\n")
		if resp, _ := r.answer(http.MethodGet); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("garbage answered %d, want 400", resp.StatusCode)
		}
		if !r.closed() {
			t.Fatal("the connection stayed open after a request that does not parse")
		}
	})

	t.Run("204 carries no length and no body", func(t *testing.T) {
		r := dialRaw(t, s)
		r.send("GET /api/v1/pop/queue/q204?wait=false HTTP/1.1\r\nHost: mq\r\n\r\n" + health)
		resp, _ := r.answer(http.MethodGet)
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Content-Length") != "" {
			t.Fatalf("empty pop answered %d with Content-Length %q; want 204 without one", resp.StatusCode, resp.Header.Get("Content-Length"))
		}
		if next, _ := r.answer(http.MethodGet); next.StatusCode != 200 {
			t.Fatalf("the request after the 204 answered %d", next.StatusCode)
		}
	})
}

// A parked long-poll whose client hangs up leaves: it is no longer parked
// and claims nothing pushed after, which a live poll then gets.
func TestAParkedPollWhoseClientLeftClaimsNothing(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	r := dialRaw(t, w.s)
	r.send("GET /api/v1/pop/queue/left?wait=true&timeout=20000&consumerGroup=g HTTP/1.1\r\nHost: mq\r\n\r\n")
	eventually(t, 10*time.Second, func() bool { return w.s.Parked() == 1 }, "the poll to park")
	_ = r.c.Close()
	eventually(t, 10*time.Second, func() bool { return w.s.Parked() == 0 }, "the abandoned poll to leave")
	w.call("POST", "/api/v1/push", `{"items":[{"queue":"left","payload":{"n":1}}]}`, 201)
	v := w.call("GET", "/api/v1/pop/queue/left?wait=false&consumerGroup=g", "", 200)
	if msgs := v.(map[string]any)["messages"].([]any); len(msgs) != 1 {
		t.Fatalf("the live pop claimed %d messages, want the one pushed after the other left", len(msgs))
	}
}

// Stop answers a parked poll and closes a kept-alive idle connection at
// once, instead of waiting out the grace.
func TestStopEndsParkedPollsAndIdleConnections(t *testing.T) {
	t.Parallel()
	s := RunT(t)
	idle := dialRaw(t, s)
	idle.send("GET /health HTTP/1.1\r\nHost: mq\r\n\r\n")
	idle.answer(http.MethodGet)
	parked := dialRaw(t, s)
	parked.send("GET /api/v1/pop/queue/stop?wait=true&timeout=30000 HTTP/1.1\r\nHost: mq\r\n\r\n")
	eventually(t, 10*time.Second, func() bool { return s.Parked() == 1 }, "the poll to park")
	t0 := time.Now()
	s.Stop()
	if d := time.Since(t0); d >= shutdownGrace {
		t.Fatalf("Stop took %v, the whole grace", d)
	}
	if resp, _ := parked.answer(http.MethodGet); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("the parked poll answered %d at Stop, want 204", resp.StatusCode)
	}
	if !idle.closed() {
		t.Fatal("the idle connection stayed open after Stop")
	}
}

// A handler that panics costs its connection, as under net/http: no
// answer, the connection closed, the panic logged with its route; the
// server goes on serving other connections.
func TestAPanickingHandlerClosesItsConnectionOnly(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "fine") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLeanServer(mux, logger)
	go func() { _ = l.serve(ln) }()
	t.Cleanup(func() { l.shutdown(ln, time.Second) })
	s := &Server{}
	s.bound.Store(new(ln.Addr().String()))

	r := dialRaw(t, s)
	r.send("GET /panic HTTP/1.1\r\nHost: mq\r\n\r\n")
	if !r.closed() {
		t.Fatal("the panicking handler's connection stayed open")
	}
	other := dialRaw(t, s)
	other.send("GET /ok HTTP/1.1\r\nHost: mq\r\n\r\n")
	if resp, body := other.answer(http.MethodGet); resp.StatusCode != 200 || body != "fine" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("after a panic elsewhere: %d %q (Content-Type %q), want 200 \"fine\" sniffed as text/plain", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), "handler panic") || !strings.Contains(logged.String(), "/panic") {
		t.Fatalf("log %q does not name the panic and its route", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
