package queen

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// syncServer is a broker stand-in that counts the connections it accepted.
func syncServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func syncClient(t *testing.T, url string) (*Client, *SyncTransport) {
	t.Helper()
	tr := NewSyncTransport(nil)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := New(url, WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	return c, tr
}

// Calls one after another share one connection, and each gets its own
// answer: a body sent whole, a query, an empty answer, a chunked one.
func TestSyncTransportKeepsOneConnectionForCallsInTurn(t *testing.T) {
	t.Parallel()
	srv, conns := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/empty":
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/chunked":
			w.Write([]byte(`{"part":1,`))
			w.(http.Flusher).Flush()
			w.Write([]byte(`"part2":2}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"method":"`+r.Method+`","query":"`+r.URL.RawQuery+`","len":`+strconv.Itoa(len(b))+`,"ct":"`+r.Header.Get("Content-Type")+`"}`)
		}
	})
	c, _ := syncClient(t, srv.URL)
	ctx := t.Context()
	body := `{"x":"` + strings.Repeat("y", 5000) + `"}`
	for range 3 {
		r, err := c.Do(ctx, http.MethodPost, "/api/v1/transaction", []byte(body))
		noErr(t, err)
		eq(t, "POST answer", string(r.Body), `{"method":"POST","query":"","len":`+strconv.Itoa(len(body))+`,"ct":"application/json"}`)
		r, err = c.Do(ctx, http.MethodGet, "/api/v1/pop?batch=1&wait=false", nil)
		noErr(t, err)
		eq(t, "GET answer", string(r.Body), `{"method":"GET","query":"batch=1&wait=false","len":0,"ct":""}`)
		r, err = c.Do(ctx, http.MethodGet, "/empty", nil)
		noErr(t, err)
		eq(t, "204 status", r.Status, http.StatusNoContent)
		r, err = c.Do(ctx, http.MethodGet, "/chunked", nil)
		noErr(t, err)
		eq(t, "chunked answer", string(r.Body), `{"part":1,"part2":2}`)
	}
	eq(t, "connections", conns.Load(), int64(1))
}

// A connection the broker closed while it was idle is not used: the next
// call, a transaction that must never be sent twice, goes out once on a
// new connection.
func TestSyncTransportLeavesAConnectionTheBrokerClosed(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv, conns := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, `{}`)
	})
	c, _ := syncClient(t, srv.URL)
	_, err := c.Do(t.Context(), http.MethodPost, "/api/v1/transaction", []byte(`{}`))
	noErr(t, err)
	srv.CloseClientConnections()
	_, err = c.Do(t.Context(), http.MethodPost, "/api/v1/transaction", []byte(`{}`))
	noErr(t, err)
	eq(t, "calls the broker served", calls.Load(), int64(2))
	eq(t, "connections", conns.Load(), int64(2))
}

// A call whose context ends while the broker holds it (a parked pop) ends
// at once with the context's error, and its connection is not reused.
func TestSyncTransportEndsACallWithItsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	srv, conns := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/park" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		io.WriteString(w, `{}`)
	})
	c, _ := syncClient(t, srv.URL)
	_, err := c.Do(t.Context(), http.MethodGet, "/ok", nil)
	noErr(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, http.MethodGet, "/park", nil)
		done <- err
	}()
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call answered %v, want context.Canceled", err)
	}
	once.Do(func() { close(release) })
	_, err = c.Do(t.Context(), http.MethodGet, "/ok", nil)
	noErr(t, err)
	eq(t, "connections", conns.Load(), int64(2))
}

// An answer with Connection: close closes its connection; the next call
// dials again.
func TestSyncTransportHonoursConnectionClose(t *testing.T) {
	t.Parallel()
	srv, conns := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, `{}`)
	})
	c, _ := syncClient(t, srv.URL)
	for range 2 {
		_, err := c.Do(t.Context(), http.MethodGet, "/x", nil)
		noErr(t, err)
	}
	eq(t, "connections", conns.Load(), int64(2))
}

// Concurrent calls each get their own connection and their own answer.
func TestSyncTransportServesConcurrentCalls(t *testing.T) {
	t.Parallel()
	srv, _ := syncServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	c, _ := syncClient(t, srv.URL)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			for k := range 20 {
				want := `{"i":` + strconv.Itoa(i) + `,"k":` + strconv.Itoa(k) + `}`
				r, err := c.Do(t.Context(), http.MethodPost, "/echo", []byte(want))
				if err != nil {
					errs <- err
					return
				}
				if string(r.Body) != want {
					errs <- errors.New("answer " + string(r.Body) + " for " + want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// https and proxied URLs go to the fallback transport.
func TestSyncTransportHandsHTTPSToItsFallback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"tls":true}`) }))
	t.Cleanup(srv.Close)
	fb := srv.Client().Transport.(*http.Transport).Clone()
	tr := NewSyncTransport(fb)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := New(srv.URL, WithHTTPClient(&http.Client{Transport: tr, Timeout: 0}))
	noErr(t, err)
	r, err := c.Do(t.Context(), http.MethodGet, "/x", nil)
	noErr(t, err)
	eq(t, "answer over TLS", string(r.Body), `{"tls":true}`)
}

// BenchmarkTransportSmallCall is one small call (a one-item claim's
// settle, a body of 300 bytes and an answer of 100) over each transport,
// against a loopback server in the same process, 8 callers at once:
// the server's share is the same under both, so the difference in
// cpu-µs/call is the transport's.
//
//	go test -run '^$' -bench TransportSmallCall ./libs/queen/
func BenchmarkTransportSmallCall(b *testing.B) {
	answer := []byte(`{"transactionId":"0198f0aa-0000-7000-8000-000000000001","success":true,"results":[{"index":0,"type":"ack","success":true}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	body := []byte(`{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","leaseId":"l","consumerGroup":"g","status":"completed"},{"type":"push","items":[{"queue":"q","partition":"p","payload":{"a":1},"transactionId":"x"}]}],"kv":[{"op":"incr","ns":"gate","key":"b","delta":1,"max":5,"ttlSeconds":2,"required":true}]}`)
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"net-http", NewTransport()}, {"sync", NewSyncTransport(NewTransport())}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := New(srv.URL, WithHTTPClient(&http.Client{Transport: tc.rt}))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(4)
			cpu0 := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Do(context.Background(), http.MethodPost, "/api/v1/transaction", body); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A connection idle for longer than the fallback's IdleConnTimeout is
// closed instead of used.
func TestSyncTransportRetiresConnectionsIdleTooLong(t *testing.T) {
	t.Parallel()
	srv, conns := syncServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	fb := NewTransport()
	fb.IdleConnTimeout = time.Nanosecond
	tr := NewSyncTransport(fb)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := New(srv.URL, WithHTTPClient(&http.Client{Transport: tr}))
	noErr(t, err)
	for range 2 {
		_, err := c.Do(t.Context(), http.MethodGet, "/x", nil)
		noErr(t, err)
	}
	eq(t, "connections", conns.Load(), int64(2))
}
