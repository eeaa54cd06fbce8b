package live

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// The console's lists page on the server (style.md: an opaque cursor on
// every list), so a page costs the same at ten thousand graphs as at ten:
// its rows' broker reads, and one pass over the catalogue in memory.
const (
	// defaultPageLimit is the rows of a page without ?limit=.
	defaultPageLimit = 50
	// maxPageLimit bounds ?limit=: a page's rows each read the broker.
	maxPageLimit = 200
	// maxCursorBytes bounds ?cursor=: a cursor names one application and
	// one graph (63 bytes each), base64-encoded.
	maxCursorBytes = 256
	// maxSearchBytes bounds ?q=.
	maxSearchBytes = 128
)

// States a target row is filtered by (?state=), as the Targets page names
// them: pacing and flowing graphs run, stopped ones do not. Watch, ready
// (for review) and held are what the overview counts: in Watch, in Watch
// past its period, and held by a backoff.
const (
	statePacing  = "pacing"
	stateFlowing = "flowing"
	stateStopped = "stopped"
	stateWatch   = "watch"
	stateReady   = "ready"
	stateHeld    = "held"
)

// listQuery is what a list request asks for.
type listQuery struct {
	// limit is the page's most rows.
	limit int
	// after is the cursor's key: the page starts after it (nil: at the
	// start). On /api/apps only App is set.
	after *plane.GraphKey
	// q is the lower-cased search, "" for none.
	q string
	// app is the one application listed, "" for all.
	app string
	// state is the targets' state filter, "" for all.
	state string
}

// readList reads a list route's query: limit, cursor, q, and where the
// route takes them app and state. Each refusal names its parameter: 422
// for a value out of its range or form, 400 for a cursor no list gave.
func readList(q *httpapi.Request, apps, withState bool) (listQuery, *httpapi.Refusal) {
	v := q.Query()
	lq := listQuery{}
	var bad *httpapi.Refusal
	if lq.limit, bad = httpapi.QueryRange(v, "limit", defaultPageLimit, 1, maxPageLimit); bad != nil {
		return lq, bad
	}
	search, bad := queryText(v, "q", maxSearchBytes)
	if bad != nil {
		return lq, bad
	}
	lq.q = strings.ToLower(strings.TrimSpace(search))
	cursor, bad := queryText(v, "cursor", maxCursorBytes)
	if bad != nil {
		return lq, bad
	}
	if cursor != "" {
		k, problem := decodeCursor(cursor, apps)
		if problem != "" {
			return lq, httpapi.Refuse(http.StatusBadRequest, wire.CodeInvalidQuery, "cursor=%.40q is not a cursor this list gave (%s): pass back the next of the previous page, or leave cursor out to start at the first page", cursor, problem).Field("cursor")
		}
		lq.after = &k
	}
	if apps {
		return lq, nil
	}
	if lq.app, bad = queryText(v, "app", 63); bad != nil {
		return lq, bad
	}
	if lq.app != "" {
		if p := plane.NameProblem(lq.app); p != "" {
			return lq, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "app=%.40q %s: give an application name (1–63 bytes of a-z, 0-9 and '-'), or leave app out to list every application", lq.app, p).Field("app")
		}
	}
	if !withState {
		return lq, nil
	}
	if lq.state, bad = queryText(v, "state", 16); bad != nil {
		return lq, bad
	}
	switch lq.state {
	case "", statePacing, stateFlowing, stateStopped, stateWatch, stateReady, stateHeld:
	default:
		return lq, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "state=%.40q is not a target state: give pacing, flowing, stopped, watch, ready or held, or leave state out", lq.state).Field("state")
	}
	return lq, nil
}

// queryText reads an optional text parameter given at most once, of at
// most max bytes of printable UTF-8.
func queryText(v url.Values, name string, max int) (string, *httpapi.Refusal) {
	raw, ok := v[name]
	if !ok || len(raw) == 0 {
		return "", nil
	}
	if len(raw) > 1 {
		return "", httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s is given %d times: give it once", name, len(raw)).Field(name)
	}
	s := raw[0]
	if len(s) > max {
		return "", httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s is %d bytes long, over %d: give a shorter one", name, len(s), max).Field(name)
	}
	if !utf8.ValidString(s) {
		return "", httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s is not valid UTF-8: send it percent-encoded UTF-8", name).Field(name)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "", httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s has the control character %U: send printable text", name, r).Field(name)
		}
	}
	return s, nil
}

// encodeCursor is the opaque cursor of the page after k: base64url of
// "app/graph" (of "app" on /api/apps). Names hold no '/', so it parses
// back unambiguously.
func encodeCursor(k plane.GraphKey, apps bool) *string {
	s := k.App
	if !apps {
		s += "/" + k.Graph
	}
	c := base64.RawURLEncoding.EncodeToString([]byte(s))
	return &c
}

// decodeCursor reads a cursor encodeCursor made; problem says why not.
func decodeCursor(c string, apps bool) (plane.GraphKey, string) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return plane.GraphKey{}, "not base64url"
	}
	s := string(raw)
	if apps {
		if p := plane.NameProblem(s); p != "" {
			return plane.GraphKey{}, "its application " + p
		}
		return plane.GraphKey{App: s}, ""
	}
	app, graph, ok := strings.Cut(s, "/")
	if !ok {
		return plane.GraphKey{}, "it names no graph"
	}
	if p := plane.NameProblem(app); p != "" {
		return plane.GraphKey{}, "its application " + p
	}
	if p := plane.NameProblem(graph); p != "" {
		return plane.GraphKey{}, "its graph " + p
	}
	return plane.GraphKey{App: app, Graph: graph}, ""
}

// matchesGraph reports whether e is listed under the search and the
// application filter.
func (lq listQuery) matchesGraph(e *plane.Entry) bool {
	if lq.app != "" && e.App != lq.app {
		return false
	}
	if lq.q == "" {
		return true
	}
	return strings.Contains(e.App, lq.q) || strings.Contains(e.Graph, lq.q) ||
		(strings.Contains(lq.q, "/") && strings.Contains(e.App+"/"+e.Graph, lq.q))
}

// pageGraphs is the page of graphs lq asks for out of sorted (the
// catalogue in key order): at most lq.limit graphs after the cursor that
// keep (the search, the filters and the compiled plan, checked by the
// caller), the cursor of the next page (nil on the last), and how many
// graphs keep in all. One pass over the catalogue in memory (only the
// application's run of it with ?app=).
func pageGraphs(sorted []*plane.Entry, lq listQuery, keep func(*plane.Entry) bool) (rows []*plane.Entry, next *string, matched int) {
	from, to := 0, len(sorted)
	if lq.app != "" {
		from = plane.After(sorted, plane.GraphKey{App: lq.app})
		for to = from; to < len(sorted) && sorted[to].App == lq.app; to++ {
		}
	}
	start := from
	if lq.after != nil {
		start = max(from, plane.After(sorted, *lq.after))
	}
	more := false
	for i := from; i < to; i++ {
		e := sorted[i]
		if !keep(e) {
			continue
		}
		matched++
		switch {
		case i < start:
		case len(rows) < lq.limit:
			rows = append(rows, e)
		default:
			more = true
		}
	}
	if more {
		last := rows[len(rows)-1]
		next = encodeCursor(plane.GraphKey{App: last.App, Graph: last.Graph}, false)
	}
	return rows, next, matched
}

// setNextLink writes the Link header of a page that has a next one
// (RFC 8288, rel="next"): the same request with the cursor replaced.
func setNextLink(q *httpapi.Request, next *string) {
	if next == nil {
		return
	}
	u := *q.R.URL
	v := u.Query()
	v.Set("cursor", *next)
	u.RawQuery = v.Encode()
	q.W.Header().Set("Link", "<"+u.RequestURI()+`>; rel="next"`)
}
