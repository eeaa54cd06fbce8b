package queen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNewValidatesTheBaseURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{"http://127.0.0.1:6632", "http://127.0.0.1:6632", true},
		{"http://127.0.0.1:6632/", "http://127.0.0.1:6632", true},
		{" https://queen.example/prefix/ ", "https://queen.example/prefix", true},
		{"127.0.0.1:6632", "", false},
		{"ftp://x", "", false},
		{"http://", "", false},
		{"http://x/?a=1", "", false},
		{"://bad", "", false},
	}
	for _, tc := range cases {
		c, err := New(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("New(%q) err = %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && c.BaseURL() != tc.want {
			t.Errorf("New(%q).BaseURL() = %q, want %q", tc.in, c.BaseURL(), tc.want)
		}
	}
}

func TestBearerTokenAndPathPrefix(t *testing.T) {
	t.Parallel()
	var got, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, path = r.Header.Get("Authorization"), r.URL.Path
		w.WriteHeader(204)
	}))
	t.Cleanup(srv.Close)
	custom := &http.Client{Transport: NewTransport()}
	c, err := New(srv.URL+"/queen", WithToken("tok-1"), WithHTTPClient(custom))
	noErr(t, err)
	eq(t, "custom client", c.HTTPClient(), custom)
	_, err = c.Pop(t.Context(), PopRequest{Queue: "q"})
	noErr(t, err)
	eq(t, "authorization", got, "Bearer tok-1")
	eq(t, "path", path, "/queen/api/v1/pop/queue/q")

	c2, err := New(srv.URL, WithHTTPClient(nil))
	noErr(t, err)
	eq(t, "default client kept", c2.HTTPClient(), sharedHTTP)
	_, err = c2.Pop(t.Context(), PopRequest{Queue: "q"})
	noErr(t, err)
	eq(t, "no token, no header", got, "")
}

func TestErrorDecoding(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name                  string
		status                int
		retryAfter            string
		body                  string
		code, reason, message string
		wait                  time.Duration
	}{
		{"kv envelope", 400, "", `{"error":"kv_bad_request","reason":"kv_bad_ttl","detail":"ttlSeconds must be > 0"}`, "kv_bad_request", "kv_bad_ttl", "ttlSeconds must be > 0", 0},
		{"sentence error", 400, "", `{"error":"bad body: expected value at line 1"}`, "", "", "bad body: expected value at line 1", 0},
		{"proxy code", 403, "", `{"error":"Cluster suspended","code":"cluster_suspended"}`, "cluster_suspended", "", "Cluster suspended", 0},
		{"rate limited with seconds", 429, "7", `{"error":"rate_limited","reason":"rate_limited"}`, "rate_limited", "rate_limited", "rate_limited", 7 * time.Second},
		{"retry-after as a date", 503, "Tue, 04 Aug 2026 10:00:30 GMT", `{"error":"kv_disabled"}`, "kv_disabled", "", "kv_disabled", 30 * time.Second},
		{"retry-after in the past", 503, "Tue, 04 Aug 2026 09:00:00 GMT", `{"error":"kv_disabled"}`, "kv_disabled", "", "kv_disabled", 0},
		{"retry-after garbage", 429, "soon", `{}`, "", "", "", 0},
		{"plain text", 502, "", "Bad Gateway\n", "", "", "Bad Gateway", 0},
		{"error is not a string", 500, "", `{"error":{"nested":true}}`, "", "", "", 0},
		{"empty body", 500, "", "", "", "", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tc.retryAfter != "" {
				h.Set("Retry-After", tc.retryAfter)
			}
			e := newError("POST", "/api/v1/kv", tc.status, h, []byte(tc.body))
			e.RetryAfter = parseRetryAfter(tc.retryAfter, now)
			eq(t, "code", e.Code, tc.code)
			eq(t, "reason", e.Reason, tc.reason)
			eq(t, "message", e.Message, tc.message)
			eq(t, "retry after", e.RetryAfter, tc.wait)
			if !strings.Contains(e.Error(), "POST /api/v1/kv") || !strings.Contains(e.Error(), fmt.Sprint(tc.status)) {
				t.Errorf("Error() = %q lacks the call or status", e.Error())
			}
			wrapped := fmt.Errorf("charging: %w", e)
			eq(t, "StatusOf(wrapped)", StatusOf(wrapped), tc.status)
		})
	}
	if StatusOf(errors.New("x")) != 0 || IsNotFound(nil) || CodeOf(nil) != "" || ReasonOf(context.Canceled) != "" {
		t.Error("helpers must report nothing for non-broker errors")
	}
	if _, ok := RetryAfter(errors.New("x")); ok {
		t.Error("RetryAfter reported a wait for a non-broker error")
	}
	long := newError("GET", "/x", 500, nil, []byte(strings.Repeat("a", 10000)))
	eq(t, "body capped", len(long.Body), maxErrorBody)
	eq(t, "message capped", len(long.Message), maxErrorMessage)
}

func TestTransportFailureIsNotABrokerError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	c, err := New(addr)
	noErr(t, err)
	_, err = c.KV(t.Context(), KVIncr("gate", "k", 1, IncrOpts{TTLSeconds: 1}))
	if err == nil {
		t.Fatal("want a transport error")
	}
	eq(t, "StatusOf", StatusOf(err), 0)
	if !strings.Contains(err.Error(), "POST /api/v1/kv") {
		t.Errorf("error %q does not name the call", err)
	}
	// wrapped as http.Client wraps a transport's error, naming the URL
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Op != "Post" || ue.URL != addr+"/api/v1/kv" {
		t.Errorf("error %q is not the *url.Error of POST %s/api/v1/kv", err, addr)
	}
}

func TestCancelledLongPollReturnsTheContextError(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		w.WriteHeader(204)
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	c, err := New(srv.URL)
	noErr(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Pop(ctx, PopRequest{Queue: "q", Wait: true, Timeout: 30 * time.Second})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled pop did not return")
	}
}

func TestLongPollHTTPBound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		req  PopRequest
		want time.Duration
	}{
		{PopRequest{Queue: "q"}, 0},
		{PopRequest{Queue: "q", Timeout: time.Second}, 0},
		{PopRequest{Queue: "q", Wait: true}, 35 * time.Second},
		{PopRequest{Queue: "q", Wait: true, Timeout: 2 * time.Second}, 7 * time.Second},
	}
	for _, tc := range cases {
		eq(t, fmt.Sprintf("bound(wait=%v timeout=%v)", tc.req.Wait, tc.req.Timeout), tc.req.httpBound(), tc.want)
	}
}

// TestManyConcurrentLongPolls proves the shared transport does not cap
// connections per host: 64 pops are all parked at the broker at once.
func TestManyConcurrentLongPolls(t *testing.T) {
	t.Parallel()
	const n = 64
	var arrived atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			once.Do(func() { close(all) })
		}
		select {
		case <-all:
			w.WriteHeader(204)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	noErr(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := c.Pop(ctx, PopRequest{Queue: "q", Wait: true, Timeout: 10 * time.Second})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a parked pop failed (connections capped?): %v", err)
		}
	}
}

func TestDoReturnsEveryStatus(t *testing.T) {
	t.Parallel()
	c, s := broker(t, wire{status: 400, answer: `{"error":"kv_bad_request","reason":"kv_no_query_string"}`})
	r, err := c.Do(t.Context(), "GET", "/api/v1/kv/gate/k?x=1", nil)
	noErr(t, err)
	eq(t, "status", r.Status, 400)
	eq(t, "body", string(r.Body), `{"error":"kv_bad_request","reason":"kv_no_query_string"}`)
	eq(t, "path", s.path, "/api/v1/kv/gate/k")
	eq(t, "query", s.rawQuery, "x=1")
	eq(t, "content-type", r.Header.Get("Content-Type"), "application/json")
}

func TestTimestamps(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 8, 21, 8, 0, 1, 204311000, time.UTC)
	for _, s := range []string{
		"2026-08-21T08:00:01.204311+00:00",
		"2026-08-21T08:00:01.204311Z",
		"2026-08-21 08:00:01.204311+00:00",
		"2026-08-21 08:00:01.204311+00",
		"2026-08-21T10:00:01.204311+02:00",
		"2026-08-21T08:00:01.204311",
	} {
		got, err := ParseTimestamp(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTimestamp(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseTimestamp("yesterday"); err == nil {
		t.Error("garbage parsed")
	}
	zero, err := Timestamp("").Time()
	if err != nil || !zero.IsZero() {
		t.Errorf("empty Timestamp = %v, %v", zero, err)
	}
	eq(t, "format", FormatTimestamp(time.Date(2026, 8, 4, 11, 15, 0, 123456789, time.FixedZone("x", 7200))), "2026-08-04T09:15:00.123Z")
}

func TestCeilSeconds(t *testing.T) {
	t.Parallel()
	cases := map[time.Duration]int64{
		0: 0, -time.Second: 0, time.Nanosecond: 1, 999 * time.Millisecond: 1,
		time.Second: 1, 1200 * time.Millisecond: 2, time.Hour: 3600,
	}
	for d, want := range cases {
		eq(t, fmt.Sprintf("CeilSeconds(%v)", d), CeilSeconds(d), want)
	}
}

func TestNewTransactionID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewTransactionID()
		if !re.MatchString(id) {
			t.Fatalf("%q is not a UUIDv7", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
	// Ids are ordered by their millisecond prefix: mint until it changes.
	before, after := NewTransactionID(), ""
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if after = NewTransactionID(); after[:13] != before[:13] {
			break
		}
	}
	if before[:13] >= after[:13] {
		t.Errorf("ids not time-ordered: %s then %s", before, after)
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"plain-Key_1.x~": "plain-Key_1.x~",
		"graph:app:name": "graph%3Aapp%3Aname",
		"a/b c":          "a%2Fb%20c",
		"é?#%":           "%C3%A9%3F%23%25",
	}
	for in, want := range cases {
		eq(t, "escape("+in+")", escape(in), want)
	}
}

// Every call carries the client's headers: Accept on all, Content-Type on
// those with a body, the bearer token on both; a body is sent whole and
// the route and query reach the broker as built, through the default
// client and through one with an overall timeout (which http.Client
// applies, so the call goes through it).
func TestEveryCallCarriesItsHeadersAndBody(t *testing.T) {
	t.Parallel()
	type seen struct{ method, uri, accept, ctype, auth, body string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.RequestURI(), r.Header.Get("Accept"), r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)})
		mu.Unlock()
		if r.Method == http.MethodPost {
			w.Write([]byte(`{"transactionId":"t","success":true,"results":[{"index":0,"type":"push","success":true}]}`))
			return
		}
		w.WriteHeader(204)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name  string
		token string
		hc    *http.Client
	}{
		{"default client, no token", "", nil},
		{"default client, token", "tok-2", nil},
		{"client with a timeout", "tok-3", &http.Client{Timeout: 5 * time.Second, Transport: NewTransport()}},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		c, err := New(srv.URL, WithToken(tc.token), WithHTTPClient(tc.hc))
		noErr(t, err)
		p, err := c.PreparePop(PopRequest{Queue: "q/1", ConsumerGroup: "g", Batch: 5})
		noErr(t, err)
		for range 2 {
			_, err = p.Pop(t.Context())
			noErr(t, err)
		}
		tx := &Transaction{}
		tx.Push(PushItem{Queue: "out", Payload: []byte(`{"a":1}`)})
		res, err := c.Transact(t.Context(), tx)
		noErr(t, err)
		eq(t, tc.name+": committed", res.Success, true)
		auth := ""
		if tc.token != "" {
			auth = "Bearer " + tc.token
		}
		pop := seen{"GET", "/api/v1/pop/queue/q%2F1?batch=5&consumerGroup=g", "application/json", "", auth, ""}
		txn := seen{"POST", "/api/v1/transaction", "application/json", "application/json", auth, `{"operations":[{"type":"push","items":[{"queue":"out","payload":{"a":1}}]}]}`}
		mu.Lock()
		want := []seen{pop, pop, txn}
		if len(got) != len(want) {
			t.Fatalf("%s: the broker saw %d calls %+v, want %d", tc.name, len(got), got, len(want))
		}
		for i := range want {
			eq(t, fmt.Sprintf("%s: call %d", tc.name, i), got[i], want[i])
		}
		mu.Unlock()
	}
}

// TestSmallConnectionBuffersCarryLargeHeadersAndBodies: the default
// transport's 1 KiB connection buffers still carry a header line several
// times their size and bodies of megabytes both ways, unchanged, over one
// kept-alive connection.
func TestSmallConnectionBuffersCarryLargeHeadersAndBodies(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("h", 6<<10)
	big := `{"v":"` + strings.Repeat("b", 2<<20) + `"}`
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got.Store(string(body))
		w.Header().Set("X-Long", long)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, big)
	}))
	defer srv.Close()
	tr := NewTransport()
	defer tr.CloseIdleConnections()
	if tr.ReadBufferSize != transportBufferSize || tr.WriteBufferSize != transportBufferSize {
		t.Fatalf("buffers %d / %d, want %d", tr.ReadBufferSize, tr.WriteBufferSize, transportBufferSize)
	}
	c, err := New(srv.URL, WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := c.Do(t.Context(), "POST", "/api/v1/anything", []byte(big))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != 200 || res.Header.Get("X-Long") != long || string(res.Body) != big {
			t.Fatalf("call %d: status %d, header %d bytes, body %d bytes; want 200, %d and %d", i, res.Status, len(res.Header.Get("X-Long")), len(res.Body), len(long), len(big))
		}
		if s, _ := got.Load().(string); s != big {
			t.Fatalf("call %d: the server read %d bytes, want %d", i, len(s), len(big))
		}
	}
}
