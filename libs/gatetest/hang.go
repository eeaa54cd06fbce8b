package gatetest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// HangingProxy forwards TCP connections to a target until Hang: from then
// on it still accepts connections and reads what each side sends, but
// forwards nothing and answers nothing — a server that accepts and never
// answers (a hung PostgreSQL, a stuck load balancer), which a closed port
// or a refused connection is not. Close it with the test (NewHangingProxy
// registers that; close it earlier to release a client that waits on it).
type HangingProxy struct {
	// Addr is the proxy's host:port.
	Addr   string
	target string
	ln     net.Listener

	mu     sync.Mutex
	hung   bool
	closed bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

// NewHangingProxy listens on a free loopback port and forwards to target
// (host:port) until Hang is called.
func NewHangingProxy(t testing.TB, target string) *HangingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &HangingProxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// Hang stops forwarding, on the open connections and on every new one.
func (p *HangingProxy) Hang() {
	p.mu.Lock()
	p.hung = true
	p.mu.Unlock()
}

func (p *HangingProxy) isHung() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hung
}

func (p *HangingProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *HangingProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		if p.isHung() {
			p.wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(up) {
			return
		}
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe copies src to dst until Hang, then swallows src.
func (p *HangingProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isHung() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close closes the listener and every connection (the peers see them
// end) and waits for the proxy's goroutines. It may be called more than
// once; the test's cleanup calls it.
func (p *HangingProxy) Close() {
	p.mu.Lock()
	wasClosed := p.closed
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	if !wasClosed {
		p.ln.Close()
	}
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
