package observe

import (
	"context"
	"math"

	"github.com/queen-mq/gate/libs/shadow"
	"github.com/queen-mq/gate/libs/store"
)

// readShadows refreshes which graphs have a shadow candidate (one paged
// read of shadow:* per flush). A failed read keeps what was known: the
// recording of a shadow is never stopped by one broker hiccup.
func (h *Handover) readShadows(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, err := store.New(h.cfg.Client, h.cfg.Namespace).Shadows(cctx)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Debug("history handover: reading shadow candidates failed; keeping the last known", "error", err)
		}
		return
	}
	m := make(map[graphKey]int64, len(list))
	needs := map[graphKey]map[string]shadow.Need{}
	for _, sh := range list {
		k := graphKey{sh.Application, sh.Graph}
		m[k] = sh.Since
		// A scoped or op-filtered candidate needs each item's values:
		// recorded per second while it is set (keys.go). A candidate that
		// does not read needs nothing here; gate-recorder says why.
		if c, err := shadow.ParseCandidate(sh.Candidate, nil); err == nil {
			if nd := shadow.Needs(c); len(nd) > 0 {
				needs[k] = nd
			}
		}
	}
	h.mu.Lock()
	h.shadows = m
	h.needs = needs
	h.mu.Unlock()
}

// sampling is the per-second recording a runtime gets: its Watch while the
// Watch records; otherwise, when the graph has a shadow candidate, a
// recording session of its own (the candidate's since, with no end), so a
// shadow sees the items every node forwards on enforcing graphs too
// (gate-recorder evaluates the candidate on them). Called with h.mu held.
func (h *Handover) sampling(k graphKey, w *WatchInfo, now int64) *WatchInfo {
	if w != nil && now < w.Until {
		return w
	}
	if since, ok := h.shadows[k]; ok {
		return &WatchInfo{Session: since, Until: math.MaxInt64}
	}
	return w
}
