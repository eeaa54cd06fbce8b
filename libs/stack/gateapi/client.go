package gateapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/wire"
)

// StatusError is a response whose status is not 200.
type StatusError struct {
	// Method and Path say which call failed.
	Method, Path string
	// Status is the HTTP status.
	Status int
	// Message is the body's "error" text, or the raw body when it has none.
	Message string
	// RetryAfter is the Retry-After header in seconds (0 when absent).
	RetryAfter int
	// Body is the refusal as gate-api wrote it (its code, rule, field,
	// and on a 412 the stored document's etag, changedBy and changedAt);
	// zero when the answer was not a JSON refusal.
	Body wire.Error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("gate-api %s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

// StatusOf returns the HTTP status of a *StatusError in err's chain, else 0.
func StatusOf(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// Client talks to one gate-api. The zero value is not usable; use New.
type Client struct {
	base string
	hc   *http.Client
}

// New returns a client of the gate-api at baseURL (e.g.
// "http://127.0.0.1:8788"). A nil hc uses a pooled client with a 30 s
// timeout.
func New(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 1024
		tr.MaxIdleConnsPerHost = 1024
		hc = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// BaseURL is the gate-api URL the client talks to.
func (c *Client) BaseURL() string { return c.base }

// HTTPClient is the underlying HTTP client.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// do sends one request and returns the body of a 200, or a *StatusError.
func (c *Client) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	b, _, err := c.send(ctx, method, path, body, nil)
	return b, err
}

// send is do with request headers (name, value pairs; an empty value is
// not sent) that also returns the answer's headers. A []byte body is sent
// as it is; anything else is encoded as JSON.
func (c *Client) send(ctx context.Context, method, path string, body any, headers []string) ([]byte, http.Header, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(body)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("gate-api %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("gate-api %s %s: reading body: %w", method, path, err)
	}
	if res.StatusCode != http.StatusOK {
		se := &StatusError{Method: method, Path: path, Status: res.StatusCode, Message: strings.TrimSpace(string(b))}
		if json.Unmarshal(b, &se.Body) == nil && se.Body.Error != "" {
			se.Message = se.Body.Error
		}
		if ra := res.Header.Get("Retry-After"); ra != "" {
			se.RetryAfter, _ = strconv.Atoi(ra)
		}
		return nil, res.Header, se
	}
	return b, res.Header, nil
}

// RefusalOf returns the refusal body of a *StatusError in err's chain
// (its code, rule, field, etag, changedBy …), and false when err is not
// one.
func RefusalOf(err error) (wire.Error, bool) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Body, true
	}
	return wire.Error{}, false
}

// Health answers nil when GET /health answers 200.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/health", nil)
	return err
}

func graphPath(app, graph string) string {
	return "/v1/apps/" + url.PathEscape(app) + "/graphs/" + url.PathEscape(graph)
}

// Declare PUTs the whole document of app/graph and returns the resolved
// plan. A 200 that does not say ok:true is an error.
func (c *Client) Declare(ctx context.Context, app, graph string, doc any) (Declared, error) {
	b, err := c.do(ctx, http.MethodPut, graphPath(app, graph), doc)
	if err != nil {
		return Declared{}, err
	}
	var d Declared
	if err := json.Unmarshal(b, &d); err != nil {
		return Declared{}, fmt.Errorf("decoding the declare answer: %w", err)
	}
	if !d.OK {
		return d, fmt.Errorf("declaring %s/%s: the answer does not say ok:true: %.300s", app, graph, b)
	}
	return d, nil
}

// Delete removes app/graph (stored document first, then the runtime).
func (c *Client) Delete(ctx context.Context, app, graph string) error {
	_, err := c.do(ctx, http.MethodDelete, graphPath(app, graph), nil)
	return err
}

// View reads the live graph view of app/graph.
func (c *Client) View(ctx context.Context, app, graph string) (View, error) {
	b, err := c.do(ctx, http.MethodGet, graphPath(app, graph), nil)
	if err != nil {
		return View{}, err
	}
	var v View
	if err := json.Unmarshal(b, &v); err != nil {
		return View{}, fmt.Errorf("decoding the graph view: %w", err)
	}
	return v, nil
}

// Push sends one item through the front door of node.
func (c *Client) Push(ctx context.Context, app, graph, node string, body PushBody) (Pushed, error) {
	b, err := c.do(ctx, http.MethodPost, graphPath(app, graph)+"/nodes/"+url.PathEscape(node)+"/push", body)
	if err != nil {
		return Pushed{}, err
	}
	var p Pushed
	if err := json.Unmarshal(b, &p); err != nil {
		return Pushed{}, fmt.Errorf("decoding the push answer: %w", err)
	}
	return p, nil
}

// Backoff reports a vendor 429 on node: every path stops for seconds.
func (c *Client) Backoff(ctx context.Context, app, graph, node string, seconds int, by string) error {
	body := wire.BackoffBody{RetryAfterSeconds: int64(seconds), By: by}
	_, err := c.do(ctx, http.MethodPost, graphPath(app, graph)+"/nodes/"+url.PathEscape(node)+"/backoff", body)
	return err
}

// Observe reports one vendor answer (its status and response headers) on
// node: the node's mirrored budgets follow the vendor's meter.
func (c *Client) Observe(ctx context.Context, app, graph, node string, body wire.ObserveBody) (wire.Observed, error) {
	b, err := c.do(ctx, http.MethodPost, graphPath(app, graph)+"/nodes/"+url.PathEscape(node)+"/observe", body)
	if err != nil {
		return wire.Observed{}, err
	}
	var o wire.Observed
	if err := json.Unmarshal(b, &o); err != nil {
		return wire.Observed{}, fmt.Errorf("decoding the observe answer: %w", err)
	}
	return o, nil
}

// Settle reports the actual cost of an egress message (as popped) on
// node: a lower cost goes back to the window it was charged in, a higher
// one is a debt.
func (c *Client) Settle(ctx context.Context, app, graph, node string, body wire.SettleBody) (wire.Settled, error) {
	b, err := c.do(ctx, http.MethodPost, graphPath(app, graph)+"/nodes/"+url.PathEscape(node)+"/settle", body)
	if err != nil {
		return wire.Settled{}, err
	}
	var o wire.Settled
	if err := json.Unmarshal(b, &o); err != nil {
		return wire.Settled{}, fmt.Errorf("decoding the settle answer: %w", err)
	}
	return o, nil
}

// Write is how a declare, restore or delete is sent: its preconditions
// (RFC 9110) and whether it is a dry run. The zero value is an
// unconditional write.
type Write struct {
	// IfMatch is an entity tag (as an ETag header or an answer's etag gave
	// it) or "*": the write applies only over that stored document (any,
	// for "*"); otherwise 412.
	IfMatch string
	// IfNoneMatch "*" makes a PUT create only: 412 when the graph exists.
	IfNoneMatch string
	// Target sends a PUT to the /targets/{name} route (a v1 body is read
	// as a v1 target there).
	Target bool
}

func (w Write) headers() []string {
	return []string{"If-Match", w.IfMatch, "If-None-Match", w.IfNoneMatch}
}

func docPath(app, graph string, target bool) string {
	if target {
		return "/v1/apps/" + url.PathEscape(app) + "/targets/" + url.PathEscape(graph)
	}
	return graphPath(app, graph)
}

// Put declares doc (any JSON value, or the document's bytes as they are)
// as app/graph under w's preconditions; the answer carries the stored
// document's etag, the diff and the history revision. A 412 is a
// *StatusError whose Body names the stored document (RefusalOf).
func (c *Client) Put(ctx context.Context, app, graph string, doc any, w Write) (Declared, error) {
	b, h, err := c.send(ctx, http.MethodPut, docPath(app, graph, w.Target), doc, w.headers())
	if err != nil {
		return Declared{}, err
	}
	var d Declared
	if err := json.Unmarshal(b, &d); err != nil {
		return Declared{}, fmt.Errorf("decoding the declare answer: %w", err)
	}
	if d.ETag == "" {
		d.ETag = h.Get("ETag")
	}
	return d, nil
}

// DryRun checks doc as app/graph exactly as Put would and answers the plan,
// the warnings and the diff against the stored document, storing nothing;
// its StoredETag, sent as IfMatch (or IfNoneMatch "*" when nil), applies
// exactly the change it showed.
func (c *Client) DryRun(ctx context.Context, app, graph string, doc any, w Write) (wire.DryRun, error) {
	b, _, err := c.send(ctx, http.MethodPut, docPath(app, graph, w.Target)+"?dryRun=true", doc, w.headers())
	if err != nil {
		return wire.DryRun{}, err
	}
	var d wire.DryRun
	if err := json.Unmarshal(b, &d); err != nil {
		return wire.DryRun{}, fmt.Errorf("decoding the dry run answer: %w", err)
	}
	return d, nil
}

// DeleteIf removes app/graph only if its stored document is the one
// ifMatch names ("*": any); otherwise a 412 *StatusError.
func (c *Client) DeleteIf(ctx context.Context, app, graph, ifMatch string) (wire.Deleted, error) {
	b, _, err := c.send(ctx, http.MethodDelete, graphPath(app, graph), nil, []string{"If-Match", ifMatch})
	if err != nil {
		return wire.Deleted{}, err
	}
	var d wire.Deleted
	if err := json.Unmarshal(b, &d); err != nil {
		return wire.Deleted{}, fmt.Errorf("decoding the delete answer: %w", err)
	}
	return d, nil
}

// ViewTagged is View with the stored document's entity tag (the ETag
// header): send it as Write.IfMatch to change what was read.
func (c *Client) ViewTagged(ctx context.Context, app, graph string) (View, string, error) {
	b, h, err := c.send(ctx, http.MethodGet, graphPath(app, graph), nil, nil)
	if err != nil {
		return View{}, "", err
	}
	var v View
	if err := json.Unmarshal(b, &v); err != nil {
		return View{}, "", fmt.Errorf("decoding the graph view: %w", err)
	}
	return v, h.Get("ETag"), nil
}

// Versions reads a page of app/graph's change history, newest first
// (limit 0: the server's 50; cursor "": the newest page, else the Next of
// the previous page).
func (c *Client) Versions(ctx context.Context, app, graph string, limit int, cursor string) (wire.GraphVersionPage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	path := graphPath(app, graph) + "/versions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	b, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return wire.GraphVersionPage{}, err
	}
	var p wire.GraphVersionPage
	if err := json.Unmarshal(b, &p); err != nil {
		return wire.GraphVersionPage{}, fmt.Errorf("decoding the history page: %w", err)
	}
	return p, nil
}

// Revision reads one revision of app/graph's history with its document
// and diff.
func (c *Client) Revision(ctx context.Context, app, graph string, revision int64) (wire.GraphRevision, error) {
	b, err := c.do(ctx, http.MethodGet, graphPath(app, graph)+"/versions/"+strconv.FormatInt(revision, 10), nil)
	if err != nil {
		return wire.GraphRevision{}, err
	}
	var r wire.GraphRevision
	if err := json.Unmarshal(b, &r); err != nil {
		return wire.GraphRevision{}, fmt.Errorf("decoding the revision: %w", err)
	}
	return r, nil
}

// Restore declares revision's document as app/graph's next version under
// w's preconditions.
func (c *Client) Restore(ctx context.Context, app, graph string, revision int64, w Write) (Declared, error) {
	b, h, err := c.send(ctx, http.MethodPost, graphPath(app, graph)+"/versions/"+strconv.FormatInt(revision, 10)+"/restore", nil, w.headers())
	if err != nil {
		return Declared{}, err
	}
	var d Declared
	if err := json.Unmarshal(b, &d); err != nil {
		return Declared{}, fmt.Errorf("decoding the restore answer: %w", err)
	}
	if d.ETag == "" {
		d.ETag = h.Get("ETag")
	}
	return d, nil
}
