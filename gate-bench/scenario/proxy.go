package scenario

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
)

// Tally counts the broker calls that pass through a counting proxy.
type Tally struct {
	// Incr counts kv calls that carry an incr: admission (and refund) calls.
	Total, KV, Incr, Txn, Pop, Push atomic.Int64
}

// Snapshot is a Tally's values at one moment.
type Snapshot struct{ Total, KV, Incr, Txn, Pop, Push int64 }

// Snap reads the tally.
func (t *Tally) Snap() Snapshot {
	return Snapshot{t.Total.Load(), t.KV.Load(), t.Incr.Load(), t.Txn.Load(), t.Pop.Load(), t.Push.Load()}
}

// Sub is s − o field by field.
func (s Snapshot) Sub(o Snapshot) Snapshot {
	return Snapshot{s.Total - o.Total, s.KV - o.KV, s.Incr - o.Incr, s.Txn - o.Txn, s.Pop - o.Pop, s.Push - o.Push}
}

// countingProxy forwards everything to target and tallies each call by
// route. gate-bench points the relay (and the bare loop) at it, so both pay
// the same extra hop and the kv calls per claim can be counted.
type countingProxy struct {
	srv   *http.Server
	url   string
	tally Tally
}

func startProxy(target string) (*countingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	rp.Transport = tr
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	p := &countingProxy{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.tally.Total.Add(1)
		switch path := r.URL.Path; {
		case r.Method == http.MethodPost && path == "/api/v1/kv":
			p.tally.KV.Add(1)
			if body, err := io.ReadAll(r.Body); err == nil {
				if bytes.Contains(body, []byte(`"incr"`)) {
					p.tally.Incr.Add(1)
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		case path == "/api/v1/transaction":
			p.tally.Txn.Add(1)
		case strings.HasPrefix(path, "/api/v1/pop"):
			p.tally.Pop.Add(1)
		case path == "/api/v1/push":
			p.tally.Push.Add(1)
		}
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.srv = &http.Server{Handler: h}
	p.url = "http://" + l.Addr().String()
	go p.srv.Serve(l)
	return p, nil
}

func (p *countingProxy) close() { p.srv.Close() }
