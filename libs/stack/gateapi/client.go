package gateapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/queen-mq/gate/libs/wire"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
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
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gate-api %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("gate-api %s %s: reading body: %w", method, path, err)
	}
	if res.StatusCode != http.StatusOK {
		se := &StatusError{Method: method, Path: path, Status: res.StatusCode, Message: strings.TrimSpace(string(b))}
		var eb struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			se.Message = eb.Error
		}
		if ra := res.Header.Get("Retry-After"); ra != "" {
			se.RetryAfter, _ = strconv.Atoi(ra)
		}
		return nil, se
	}
	return b, nil
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
