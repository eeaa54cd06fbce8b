package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Client talks to one Queen broker over HTTP. It is safe for concurrent use
// by many goroutines (many parked long-polls at once); create one per broker
// URL and share it.
type Client struct {
	base  string
	token string
	hc    *http.Client
	// callTimeout bounds every call but a pop's long-poll (which carries
	// its own bound); 0 means none.
	callTimeout time.Duration
	calls       callCounts
	// template is the request every call copies; getHeader and bodyHeader
	// are the headers of a call without and with a JSON body. All three
	// are built by New and never written after.
	template              *http.Request
	getHeader, bodyHeader http.Header
	// hot holds the parsed URLs of hotRoutes (read-only after New).
	hot map[string]*url.URL
}

// DefaultCallTimeout is the deadline of every broker call except a pop's
// long-poll when WithCallTimeout is not given: a hung broker is answered
// with a *TimeoutError, never waited on.
const DefaultCallTimeout = 10 * time.Second

// WithCallTimeout bounds every call except a pop (whose bound is its
// long-poll timeout plus a grace) to d, from the moment it is sent until
// its answer is read; a context deadline that comes sooner wins. d <= 0
// removes the bound. No call is retried: the caller decides.
func WithCallTimeout(d time.Duration) Option { return func(c *Client) { c.callTimeout = d } }

// CallTimeout is the bound WithCallTimeout set (0: none).
func (c *Client) CallTimeout() time.Duration { return c.callTimeout }

// Option configures a Client.
type Option func(*Client)

// WithToken sends "Authorization: Bearer <token>" on every call (brokers
// running with JWT require it on every route except /health and the
// metrics). The empty token sends no header, which is what Gate does.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the shared HTTP client. Give it no overall
// Timeout: a long-poll's deadline comes from the context and the pop's own
// timeout. A nil client keeps the default.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// sharedHTTP is the process-wide client every Client uses unless told
// otherwise, so all of them draw from one connection pool.
var sharedHTTP = &http.Client{Transport: NewTransport()}

// transportBufferSize is the read and the write buffer of each broker
// connection. A relay keeps one connection per parked long-poll, and each
// holds both buffers for its whole life: at the transport's default of 4
// KiB each they were the largest item of an idle relay's heap (thousands
// of graphs, one parked poll each). A request's or an answer's header fits
// in 1 KiB; a larger body goes to or from the socket directly past the
// buffer, so a smaller buffer costs no extra system call where it matters.
const transportBufferSize = 1 << 10

// NewTransport returns the transport the default client uses: HTTP/1.1
// keep-alive sized for many concurrent long-polls against one broker
// (no per-host connection cap, 1024 idle connections kept per host), 1 KiB
// read and write buffers per connection, no response compression (the
// broker is normally close), and dial/TLS timeouts but no response timeout
// (a parked pop legitimately waits).
func NewTransport() *http.Transport {
	return &http.Transport{
		ReadBufferSize:  transportBufferSize,
		WriteBufferSize: transportBufferSize,
		Proxy:           http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   1024,
		MaxConnsPerHost:       0,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
}

// New returns a client for the broker at baseURL (for example
// "http://127.0.0.1:6632"; a trailing slash is ignored). The URL must be
// absolute http or https.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("queen: base URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("queen: base URL %q must be absolute http(s), e.g. http://127.0.0.1:6632", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("queen: base URL %q must not carry a query or fragment", baseURL)
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), hc: sharedHTTP, callTimeout: DefaultCallTimeout}
	for _, o := range opts {
		o(c)
	}
	c.template = &http.Request{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	c.getHeader = http.Header{"Accept": jsonHeader}
	c.bodyHeader = http.Header{"Accept": jsonHeader, "Content-Type": jsonHeader}
	if c.token != "" {
		auth := []string{"Bearer " + c.token}
		c.getHeader["Authorization"] = auth
		c.bodyHeader["Authorization"] = auth
	}
	hot := make(map[string]*url.URL, len(hotRoutes))
	for _, r := range hotRoutes {
		if hot[r], err = url.Parse(c.base + r); err != nil {
			return nil, fmt.Errorf("queen: base URL %q: %w", baseURL, err)
		}
	}
	c.hot = hot
	return c, nil
}

// BaseURL returns the broker URL the client was built with (no trailing
// slash).
func (c *Client) BaseURL() string { return c.base }

// HTTPClient returns the HTTP client the calls go through.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// RawResponse is a broker answer exactly as received.
type RawResponse struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers.
	Header http.Header
	// Body is the whole response body (empty for 204).
	Body []byte
}

// Do sends one request verbatim: method, a path under the base URL that may
// carry a query string (e.g. "/api/v1/kv/ns/k?x=1"), and a JSON body (nil
// for none). It returns an error only when no answer arrived; every status,
// 4xx/5xx included, comes back in the RawResponse. It exists for probing the
// broker with shapes the typed methods never produce.
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (RawResponse, error) {
	p, q, _ := strings.Cut(path, "?")
	resp, buf, err := c.roundTrip(ctx, method, p, q, body)
	if err != nil {
		return RawResponse{}, err
	}
	defer putBuf(buf)
	return RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: bytes.Clone(buf.Bytes())}, nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { b := bufPool.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuf(b *bytes.Buffer) {
	if b.Cap() > 4<<20 {
		return
	}
	bufPool.Put(b)
}

// roundTrip sends the request and reads the whole body into a pooled buffer
// the caller must return with putBuf.
func (c *Client) roundTrip(ctx context.Context, method, path, rawQuery string, body []byte) (*http.Response, *bytes.Buffer, error) {
	u, err := c.url(path, rawQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("queen: %s %s: %w", method, path, err)
	}
	return c.send(ctx, method, path, u, body, false)
}

// hotRoutes are the routes without a query whose URL New parses once: the
// ones a relay calls per claim or per admission.
var hotRoutes = [...]string{"/api/v1/transaction", "/api/v1/kv", "/api/v1/push", "/api/v1/ack", "/api/v1/ack/batch"}

// url parses the URL of path (with its query) under the base URL; a hot
// route's is the one New parsed, shared (never written).
func (c *Client) url(path, rawQuery string) (*url.URL, error) {
	if rawQuery == "" {
		if u, ok := c.hot[path]; ok {
			return u, nil
		}
	}
	u := c.base + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return url.Parse(u)
}

// send makes one call to u (route is its path, for errors and counting;
// longPoll marks a pop's long-poll, whose bound is its own, not the
// client's call timeout) and reads the whole answer into a pooled buffer
// the caller must return with putBuf.
//
// The request is a copy of the client's template with u and the client's
// header maps set, not one built by http.NewRequestWithContext, and with
// the default client (no overall timeout, no cookie jar) it goes straight
// to the transport: a relay makes two calls per claim, and the URL parse,
// the header maps and http.Client's redirect bookkeeping (a clone of the
// headers and of the URL per call) were a good part of a one-item claim's
// cost. u and the header maps are shared between concurrent calls and only
// read: a RoundTripper must not modify its request.
func (c *Client) send(ctx context.Context, method, route string, u *url.URL, body []byte, longPoll bool) (*http.Response, *bytes.Buffer, error) {
	if ctx == nil {
		return nil, nil, fmt.Errorf("queen: %s %s: the context is nil; pass context.Background() or a request's context", method, route)
	}
	parent := ctx
	if c.callTimeout > 0 && !longPoll {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > c.callTimeout {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.callTimeout)
			defer cancel()
		}
	}
	// timedOut is true when this client's own deadline, not the caller's
	// context, ended the call.
	timedOut := func() bool { return ctx.Err() == context.DeadlineExceeded && parent.Err() == nil }
	req := c.template.WithContext(ctx)
	req.Method = method
	req.URL = u
	req.Host = u.Host
	req.Header = c.getHeader
	if body != nil {
		// The body as http.NewRequest wraps a *bytes.Reader, which the
		// transport knows to be in memory: the headers and the body go out
		// in one write, and the body is copied through the connection's
		// buffer (any other reader costs a second write and a copy buffer
		// of the body's size per call).
		req.Header = c.bodyHeader
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	c.calls.count(route)
	resp, err := c.do(req)
	if err != nil {
		if timedOut() {
			return nil, nil, &TimeoutError{Method: method, Route: route, After: c.callTimeout, Err: err}
		}
		return nil, nil, fmt.Errorf("queen: %s %s: %w", method, route, err)
	}
	buf := getBuf()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		putBuf(buf)
		if timedOut() {
			return nil, nil, &TimeoutError{Method: method, Route: route, After: c.callTimeout, Err: err}
		}
		return nil, nil, fmt.Errorf("queen: %s %s: reading answer (HTTP %d): %w", method, route, resp.StatusCode, err)
	}
	return resp, buf, nil
}

// do sends req: through http.Client when it has an overall timeout or a
// cookie jar (what only it applies), else straight to its transport (the
// broker's routes never redirect, so a 3xx comes back as the answer). A
// transport error is wrapped as http.Client wraps it (*url.Error).
func (c *Client) do(req *http.Request) (*http.Response, error) {
	if c.hc.Timeout > 0 || c.hc.Jar != nil {
		return c.hc.Do(req)
	}
	rt := c.hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		op := req.Method[:1] + strings.ToLower(req.Method[1:])
		return nil, &url.Error{Op: op, URL: req.URL.Redacted(), Err: err}
	}
	return resp, nil
}

var jsonHeader = []string{"application/json"}

// call sends a request and hands a 2xx body to decode (status and body;
// body is empty for 204). A non-2xx answer becomes an *Error. decode may be
// nil when the body does not matter.
func (c *Client) call(ctx context.Context, method, path, rawQuery string, body []byte, decode func(status int, body []byte) error) error {
	u, err := c.url(path, rawQuery)
	if err != nil {
		return fmt.Errorf("queen: %s %s: %w", method, path, err)
	}
	return c.callURL(ctx, method, path, u, body, false, decode)
}

// callURL is call to a URL already parsed (route is its path); longPoll is
// send's.
func (c *Client) callURL(ctx context.Context, method, route string, u *url.URL, body []byte, longPoll bool, decode func(status int, body []byte) error) error {
	resp, buf, err := c.send(ctx, method, route, u, body, longPoll)
	if err != nil {
		return err
	}
	defer putBuf(buf)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return newError(method, route, resp.StatusCode, resp.Header, buf.Bytes())
	}
	if decode == nil {
		return nil
	}
	if err := decode(resp.StatusCode, buf.Bytes()); err != nil {
		if e, ok := err.(*Error); ok {
			return e
		}
		return fmt.Errorf("queen: %s %s: decoding HTTP %d answer: %w", method, route, resp.StatusCode, err)
	}
	return nil
}

// callJSON is call with a plain json.Unmarshal of a non-empty 2xx body into
// out.
func (c *Client) callJSON(ctx context.Context, method, path, rawQuery string, body []byte, out any) error {
	return c.call(ctx, method, path, rawQuery, body, func(_ int, b []byte) error {
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		return json.Unmarshal(b, out)
	})
}

// marshal encodes a request body with encoding/json.
func marshal(method, path string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("queen: %s %s: encoding request: %w", method, path, err)
	}
	return b, nil
}

// escape percent-encodes one path segment, leaving only RFC 3986 unreserved
// characters as they are ("/" becomes %2F, ":" becomes %3A).
func escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	out := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if unreserved(ch) {
			out = append(out, ch)
			continue
		}
		out = append(out, '%', hexDigits[ch>>4], hexDigits[ch&15])
	}
	return string(out)
}

func unreserved(ch byte) bool {
	return ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' ||
		ch == '-' || ch == '.' || ch == '_' || ch == '~'
}

// need returns an error naming an empty required argument.
func need(call, field, value string) error {
	if value == "" {
		return fmt.Errorf("queen: %s: %s is empty; name one", call, field)
	}
	return nil
}
