package plane

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// storedByTimeout bounds the history read that says who stored a
// document, for a 412: the refusal never waits long on (or fails because
// of) history.
const storedByTimeout = 2 * time.Second

// StoredBy is who stored the document of app/name whose entity tag is
// etag and when (Unix ms), when the history database recorded it; "" and
// nil without history, when it has no record, or when it does not answer
// within two seconds.
func (p *Plane) StoredBy(ctx context.Context, app, name, etag string) (string, *int64) {
	db := p.History()
	if db == nil || etag == "" {
		return "", nil
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storedByTimeout)
	defer cancel()
	v, found, err := db.StoredBy(hctx, app, name, etag)
	if err != nil {
		p.Log.Warn("who stored the document is unknown: history did not answer", "app", app, "graph", name, "error", err)
		return "", nil
	}
	if !found {
		return "", nil
	}
	return v.ChangedBy, &v.At
}

// RunningVersion lists the relay replicas that report running version of
// app/name (the catalogue's cached status).
func (p *Plane) RunningVersion(app, name string, version int64) []string {
	var out []string
	for _, r := range p.Cat.Runs(app, name) {
		if r.Status.Running && r.Status.Version == version {
			out = append(out, r.Replica)
		}
	}
	return out
}

// PreconditionFailed is the 412 of a graph route whose If-Match or
// If-None-Match (cond, which v says failed) does not hold against the
// stored document of app/name: etag is its entity tag ("" when nothing is
// stored) and version its version (nil then). The sentence says what is
// stored, who stored it and when (when history knows) and what to do; the
// body carries the same as etag, storedVersion, runningReplicas, changedBy
// and changedAt.
func (p *Plane) PreconditionFailed(ctx context.Context, app, name string, cond httpapi.Preconditions, v httpapi.Verdict, etag string, version *int64) *httpapi.Refusal {
	by, at := p.StoredBy(ctx, app, name, etag)
	what := "nothing is stored under '" + app + "/" + name + "'"
	if etag != "" {
		what = fmt.Sprintf("'%s/%s' is stored with ETag %s", app, name, etag)
		if version != nil {
			what = fmt.Sprintf("'%s/%s' is stored at version %d with ETag %s", app, name, *version, etag)
		}
		if by != "" {
			what += fmt.Sprintf(", stored by %s at %s", by, time.UnixMilli(*at).UTC().Format(time.RFC3339))
		}
	}
	var msg string
	switch {
	case v == httpapi.FailedIfNoneMatch && cond.IfNoneMatchAny:
		msg = what + ": If-None-Match: * creates only, and the name exists; nothing was stored. To change it, read it (GET) and send If-Match with its ETag; to create another graph, choose another name"
	case v == httpapi.FailedIfNoneMatch:
		msg = what + ", the document If-None-Match names: nothing was done"
	case etag == "":
		msg = what + " (never declared, or deleted since it was read), so If-Match cannot hold: nothing was stored or deleted; create it with If-None-Match: *"
	default:
		msg = what + ", not the document If-Match names: it changed since it was read, and nothing was stored or deleted. Read it again (GET, or a dry run of your change), review the difference, and send If-Match with its ETag"
		if cond.SentWeak() {
			msg += " (a weak tag, W/\"…\", never matches If-Match: send the ETag as the answer gave it)"
		}
	}
	e := httpapi.Refuse(http.StatusPreconditionFailed, wire.CodePreconditionFailed, "%s", msg).Current(etag, by, at)
	if version != nil {
		e = e.StoredVersion(*version, p.RunningVersion(app, name, *version))
	}
	return e
}
