package queen

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// Health is the broker's GET /health answer.
type Health struct {
	// Status is "healthy" or "unhealthy".
	Status string `json:"status"`
	// Database is "connected" or "disconnected".
	Database string `json:"database"`
	// Engine is e.g. "segments-rust"; empty on older (C++) brokers.
	Engine string `json:"engine"`
	// Version is the broker build string, e.g. "1.0.5".
	Version string `json:"version"`
}

// Healthy reports whether the broker said its database round trip worked.
func (h Health) Healthy() bool { return h.Status == "healthy" }

// Health calls GET /health. A 503 (database unreachable) returns the decoded
// unhealthy body together with an *Error (IsUnavailable), so a console can
// still show the version.
func (c *Client) Health(ctx context.Context) (Health, error) {
	const path = "/health"
	var h Health
	err := c.callJSON(ctx, http.MethodGet, path, "", nil, &h)
	var e *Error
	if errors.As(err, &e) && len(e.Body) > 0 && e.Body[0] == '{' {
		_ = json.Unmarshal(e.Body, &h)
	}
	return h, err
}

// Version returns the broker's build string from /health (there is no
// separate version route). It answers even when the broker reports its
// database down, as long as the body carried a version.
func (c *Client) Version(ctx context.Context) (string, error) {
	h, err := c.Health(ctx)
	if h.Version != "" {
		return h.Version, nil
	}
	return "", err
}
