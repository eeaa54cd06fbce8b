package server

import (
	"context"
	"github.com/queen-mq/gate/libs/wire"
	"net/http"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// healthProbe caches the broker's health for a short time, so a load
// balancer polling /health does not become broker load.
type healthProbe struct {
	ttl time.Duration

	mu  sync.Mutex
	at  time.Time
	ok  bool
	ver string
	err string
}

// brokerHealth probes the broker (1 s timeout), cached for ttl.
func (s *Server) brokerHealth(ctx context.Context) (ok bool, version, problem string) {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.at.IsZero() && time.Since(h.at) < h.ttl {
		return h.ok, h.ver, h.err
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := s.client.Health(pctx)
	h.at, h.ver = time.Now(), res.Version
	switch {
	case err != nil:
		h.ok, h.err = false, err.Error()
	case !res.Healthy():
		h.ok, h.err = false, "the broker reports status "+res.Status+" (database "+res.Database+")"
	default:
		h.ok, h.err = true, ""
	}
	return h.ok, h.ver, h.err
}

// healthz is GET /health: 200 with the broker reachable and healthy, 503
// otherwise, saying which.
func (s *Server) healthz(q *req) *apiError {
	ok, ver, problem := s.brokerHealth(q.r.Context())
	queenState := wire.QueenState{URL: s.cfg.QueenURL, Reachable: ok, Version: ver}
	if !ok {
		return fail(http.StatusServiceUnavailable, "the broker at %s is not usable: %s; gate-api cannot declare or push until it is", s.cfg.QueenURL, problem).
			with("status", "unhealthy").with("queen", queenState)
	}
	writeJSON(q.w, http.StatusOK, wire.Health{Status: "healthy", Queen: queenState})
	return nil
}

// version is GET /version: gate-api's build and the broker's.
func (s *Server) version(q *req) *apiError {
	ok, ver, _ := s.brokerHealth(q.r.Context())
	writeJSON(q.w, http.StatusOK, wire.Version{
		Gate:  buildVersion(),
		Queen: wire.QueenState{URL: s.cfg.QueenURL, Reachable: ok, Version: ver},
	})
	return nil
}

// depthCache keeps broker depth reads for a short time (views and ETAs
// read the same groups again and again).
type depthCache struct {
	ttl time.Duration

	mu sync.Mutex
	m  map[[2]string]depthEntry
}

type depthEntry struct {
	at      time.Time
	pending int64
	ok      bool
}

// pending is the backlog of queue for group ("" = the worst cursor): the
// depth route, a queue-level fallback when the group is unknown, the last
// cached value when the broker fails. ok is false when nothing is known.
func (s *Server) pending(ctx context.Context, queue, group string) (int64, bool) {
	c := &s.depth
	k := [2]string{queue, group}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[[2]string]depthEntry{}
	}
	cur, have := c.m[k]
	c.mu.Unlock()
	if have && time.Since(cur.at) < c.ttl {
		return cur.pending, cur.ok
	}
	n, ok := s.readDepth(ctx, queue, group)
	if !ok && have {
		return cur.pending, cur.ok
	}
	c.mu.Lock()
	c.m[k] = depthEntry{at: time.Now(), pending: n, ok: ok}
	c.mu.Unlock()
	return n, ok
}

func (s *Server) readDepth(ctx context.Context, queue, group string) (int64, bool) {
	d, err := s.client.Depth(ctx, queue, group)
	if err == nil {
		return d.Pending, true
	}
	if !queen.IsNotFound(err) {
		return 0, false
	}
	if group != "" {
		if d, err := s.client.Depth(ctx, queue, ""); err == nil {
			return d.Pending, true
		}
	}
	qi, err := s.client.Queue(ctx, queue)
	if err != nil {
		if queen.IsNotFound(err) {
			return 0, true
		}
		return 0, false
	}
	var n int64
	for _, p := range qi.Partitions {
		n += p.Pending
	}
	return n, true
}
