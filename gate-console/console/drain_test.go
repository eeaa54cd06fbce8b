package console

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The console's own refusals of a write — no session, read-only, a body
// that is not JSON, cross-site — reach a client that writes its whole
// 7 MiB body before reading, on the production server settings: each
// reads its 401/403/415, none is reset.
func TestConsoleRefusalsOfBigBodiesAreAnsweredNotReset(t *testing.T) {
	if testing.Short() {
		t.Skip("moves about 110 MiB over loopback")
	}
	e := newTestEnv(t, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := e.s.httpServer()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	viewer := e.sessionCookie(t, "viewer@example.com")
	admin := e.sessionCookie(t, "admin@example.com")
	body := `{"payload":{"blob":"` + strings.Repeat("x", 7<<20) + `"}}`
	cases := []struct {
		name, headers string
		status        int
	}{
		{"no session", "Content-Type: application/json\r\n", http.StatusUnauthorized},
		{"read-only", "Content-Type: application/json\r\nCookie: " + viewer.Name + "=" + viewer.Value + "\r\n", http.StatusForbidden},
		{"not JSON", "Content-Type: text/plain\r\nCookie: " + admin.Name + "=" + admin.Value + "\r\n", http.StatusUnsupportedMediaType},
		{"cross-site", "Content-Type: application/json\r\nSec-Fetch-Site: cross-site\r\nCookie: " + admin.Name + "=" + admin.Value + "\r\n", http.StatusForbidden},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		for range 4 {
			wg.Go(func() {
				conn, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(time.Minute))
				req := fmt.Sprintf("POST /v1/apps/shop/graphs/g/nodes/n/push HTTP/1.1\r\nHost: console.test\r\n%sContent-Length: %d\r\n\r\n", c.headers, len(body))
				if _, err := io.WriteString(conn, req+body); err != nil {
					t.Errorf("%s: writing the request: %v (a reset instead of the refusal)", c.name, err)
					return
				}
				res, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Errorf("%s: reading the answer: %v", c.name, err)
					return
				}
				raw, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != c.status || !strings.Contains(string(raw), `"code"`) {
					t.Errorf("%s: %d %q %v, want %d with a refusal", c.name, res.StatusCode, raw, err, c.status)
				}
			})
		}
	}
	wg.Wait()
	if n := e.reached.Load(); n != 0 {
		t.Errorf("%d refused writes reached the application plane", n)
	}
}
