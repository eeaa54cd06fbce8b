package miniqueen

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServeIdleCalls is what the HTTP server costs per idle call,
// the broker's own loop (serve.go) beside net/http's server around the
// same Handler: 64 kept-alive connections send raw requests (nothing
// parsed on the client side but the status line and the length), so the
// process's CPU per call is mostly the server's. The calls are the idle
// fleet's: a pop without wait on an empty queue, and a long-poll that
// parks and answers at its 1 ms timeout, over 1,000 queues.
func BenchmarkServeIdleCalls(b *testing.B) {
	calls := []struct{ name, query string }{
		{"pop-no-wait", "batch=200&wait=false&consumerGroup=gate.idle&leaseSeconds=30"},
		{"long-poll-timeout", "batch=200&wait=true&timeout=1&consumerGroup=gate.idle&leaseSeconds=30"},
	}
	servers := []struct {
		name  string
		start func(b *testing.B) string
	}{
		{"net-http", func(b *testing.B) string {
			s := New()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			b.Cleanup(func() { _ = srv.Close() })
			return ln.Addr().String()
		}},
		{"miniqueen", func(b *testing.B) string { return RunT(b).Addr() }},
	}
	for _, call := range calls {
		for _, srv := range servers {
			b.Run(call.name+"/"+srv.name, func(b *testing.B) {
				addr := srv.start(b)
				var next atomic.Int64
				var connMu sync.Mutex
				var conns []net.Conn
				b.Cleanup(func() {
					connMu.Lock()
					defer connMu.Unlock()
					for _, c := range conns {
						_ = c.Close()
					}
				})
				b.SetParallelism(32) // 2 cores × 32 = 64 connections
				cpu0 := cpuTime()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Error(err)
						return
					}
					connMu.Lock()
					conns = append(conns, c)
					connMu.Unlock()
					br := bufio.NewReader(c)
					var req []byte
					for pb.Next() {
						q := next.Add(1) % 1000
						req = fmt.Appendf(req[:0], "GET /api/v1/pop/queue/gate.idle.q%05d?%s HTTP/1.1\r\nHost: mq\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n", q, call.query)
						if _, err := c.Write(req); err != nil {
							b.Error(err)
							return
						}
						status, err := readAnswer(br)
						if err != nil {
							b.Error(err)
							return
						}
						if status != http.StatusNoContent {
							b.Errorf("empty pop answered %d, want 204", status)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// readAnswer reads one answer's head and body and returns its status.
func readAnswer(br *bufio.Reader) (int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 {
		return 0, fmt.Errorf("status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("status line %q: %w", line, err)
	}
	length := 0
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if _, err := br.Discard(length); err != nil {
		return 0, err
	}
	return status, nil
}
