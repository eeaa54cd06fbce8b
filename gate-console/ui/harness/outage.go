package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/stack"
)

// outage is a switchable path to the broker: a reverse proxy on its own
// loopback port in front of the stack's Queen. Down closes the listener
// and every connection through it (clients get connection refused, as
// from a broker that is gone); Up listens on the same port again. The
// broker-down console reaches Queen only through it, so a browser test can
// take the broker away from that console, and give it back, without
// touching the stack the other tests use.
type outage struct {
	addr   string
	target *url.URL
	mu     sync.Mutex
	srv    *http.Server
}

func newOutage(queenURL string) (*outage, error) {
	t, err := url.Parse(queenURL)
	if err != nil {
		return nil, err
	}
	addr, err := stack.FreeAddr()
	if err != nil {
		return nil, err
	}
	o := &outage{addr: addr, target: t}
	return o, o.up()
}

// URL is the proxied broker's address.
func (o *outage) URL() string { return "http://" + o.addr }

// up serves the proxy (a no-op while it serves).
func (o *outage) up() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.srv != nil {
		return nil
	}
	var ln net.Listener
	var err error
	for range 50 { // the port may linger a moment after down
		if ln, err = net.Listen("tcp", o.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("outage: listening on %s again: %w", o.addr, err)
	}
	o.srv = &http.Server{Handler: httputil.NewSingleHostReverseProxy(o.target), ReadHeaderTimeout: 10 * time.Second}
	go func(s *http.Server) {
		if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("outage: serve:", err)
		}
	}(o.srv)
	return nil
}

// down stops the proxy: the listener and every connection are closed.
func (o *outage) down() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.srv == nil {
		return nil
	}
	err := o.srv.Close()
	o.srv = nil
	return err
}

// control is the switch the tests call: POST /down, POST /up.
func (o *outage) control() (string, func(), error) {
	addr, err := stack.FreeAddr()
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /down", func(w http.ResponseWriter, _ *http.Request) {
		if err := o.down(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "broker down")
	})
	mux.HandleFunc("POST /up", func(w http.ResponseWriter, _ *http.Request) {
		if err := o.up(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "broker up")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + addr, func() { _ = srv.Close(); _ = o.down() }, nil
}
