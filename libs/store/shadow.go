package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/queen-mq/gate/libs/queen"
)

// ShadowPrefix starts every shadow candidate row: shadow:{app}:{graph}.
const ShadowPrefix = "shadow:"

// ShadowKey is the row of app/graph's shadow candidate.
func ShadowKey(app, graph string) string { return ShadowPrefix + app + ":" + graph }

// Shadow is a graph's shadow candidate (issue 27): budgets per node that
// run beside the enforced document on its live traffic and never refuse
// anything. This file is the row's only writer and reader.
type Shadow struct {
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Since is when the candidate was set (ms): it names the candidate's
	// series of results and the relays' recording session of a graph that
	// is not in Watch.
	Since int64 `json:"since"`
	// SetBy is who set it (the console identity, or "api").
	SetBy string `json:"setBy"`
	// BasedOn is the entity tag of the stored document the candidate was
	// compiled against.
	BasedOn string `json:"basedOn"`
	// Candidate is the body as accepted ({"nodes": {NODE: {"budgets": […]}}}).
	Candidate json.RawMessage `json:"candidate"`
}

// PutShadow stores s (replacing any candidate of its graph).
func (s *Store) PutShadow(ctx context.Context, sh Shadow) error {
	body, err := json.Marshal(sh)
	if err != nil {
		return fmt.Errorf("writing the shadow of %s/%s: %w", sh.Application, sh.Graph, err)
	}
	res, err := s.c.KV(ctx, queen.KVPut(s.ns, ShadowKey(sh.Application, sh.Graph), body, queen.PutOpts{Forever: true}))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err != nil {
		return fmt.Errorf("writing the shadow of %s/%s: %w", sh.Application, sh.Graph, err)
	}
	return nil
}

// GetShadow reads app/graph's candidate; found is false when none is set.
func (s *Store) GetShadow(ctx context.Context, app, graph string) (sh Shadow, found bool, err error) {
	res, err := s.c.KV(ctx, queen.KVGet(s.ns, ShadowKey(app, graph)))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err == nil && len(res.Results) != 1 {
		err = fmt.Errorf("the broker answered %d results for one read", len(res.Results))
	}
	if err != nil {
		return Shadow{}, false, fmt.Errorf("reading the shadow of %s/%s: %w", app, graph, err)
	}
	r := res.Results[0]
	if !r.Found {
		return Shadow{}, false, nil
	}
	sh, ok := decodeShadow(queen.KVRow{Key: r.Key, Value: r.Value})
	return sh, ok, nil
}

// DeleteShadow removes app/graph's candidate; existed says whether one was
// set.
func (s *Store) DeleteShadow(ctx context.Context, app, graph string) (existed bool, err error) {
	res, err := s.c.KV(ctx, queen.KVDelete(s.ns, ShadowKey(app, graph), queen.DeleteOpts{}))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err != nil {
		return false, fmt.Errorf("deleting the shadow of %s/%s: %w", app, graph, err)
	}
	return len(res.Results) > 0 && res.Results[0].Applied, nil
}

// Shadows reads every candidate (paged); rows that do not decode are
// skipped.
func (s *Store) Shadows(ctx context.Context) ([]Shadow, error) {
	var out []Shadow
	err := s.eachRow(ctx, ShadowPrefix, func(r queen.KVRow) {
		if sh, ok := decodeShadow(r); ok {
			out = append(out, sh)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing shadow candidates: %w", err)
	}
	return out, nil
}

func decodeShadow(r queen.KVRow) (Shadow, bool) {
	var sh Shadow
	if json.Unmarshal(r.Value, &sh) != nil || sh.Application == "" || sh.Graph == "" || r.Key != ShadowKey(sh.Application, sh.Graph) {
		return Shadow{}, false
	}
	return sh, true
}
