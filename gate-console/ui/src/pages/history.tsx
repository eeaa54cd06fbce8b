// History: every stored version of a graph (who, when, what changed), with
// restore through the dry run and If-Match. Without PostgreSQL the routes
// answer 503 and the tab says history is off.
import { useState } from "react";
import type { DryRun, GraphVersion, GraphVersionPage } from "../wire";
import { api, ApiError, useLoad, type Loaded } from "../lib/api";
import { DiffView, Warnings } from "../lib/diffview";
import { graphHref, navigate } from "../lib/router";
import { keepSaved, storedBy } from "../lib/save";
import { Empty, ErrorState, Loading, Time, useCanWrite } from "../lib/ui";

export function HistoryPage({ app, graph }: { app: string; graph: string }) {
  const [cursor, setCursor] = useState("");
  const page = useLoad(() => api.versions(app, graph, cursor), [app, graph, cursor]);
  return <HistoryView app={app} graph={graph} page={page} cursor={cursor} setCursor={setCursor} />;
}

/** The tab for one answer of the versions route (exported for the component tests). */
export function HistoryView({ app, graph, page, cursor, setCursor }: { app: string; graph: string; page: Loaded<GraphVersionPage>; cursor: string; setCursor: (c: string) => void }) {
  const [open, setOpen] = useState<number | null>(null);
  if (page.error && !page.data) {
    // 503 no-history: this console has no history database. (A 503 of
    // another code, or none from an older build, is still an error.)
    if (page.error.status === 503 && (page.error.body?.code ?? "no-history") === "no-history") {
      return (
        <div className="card" data-testid="history-off">
          <Empty title="History is off">This gate-console has no history database (PG_HOST unset), so versions are not recorded. Configure PostgreSQL for gate-api and gate-console to keep who changed what, and to restore an earlier version.</Empty>
        </div>
      );
    }
    return <ErrorState error={page.error} what="the history" />;
  }
  if (!page.data) return <Loading />;
  const d = page.data;
  return (
    <section className="card" data-testid="history">
      <h2>History</h2>
      <p className="small muted">{d.total} revision{d.total === 1 ? "" : "s"}, newest first. Each row is one stored version or deletion; open one for its document's difference from the revision before it.</p>
      {d.items.length === 0 ? <Empty title="No recorded versions">This graph was stored before history was configured, or its history was pruned.</Empty> : (
        <div className="tablewrap"><table data-testid="history-table">
          <thead><tr><th>revision</th><th>when</th><th>who</th><th>what</th><th>change</th><th /></tr></thead>
          <tbody>{d.items.map((v) => (
            <HistoryRow key={v.revision} app={app} graph={graph} v={v} open={open === v.revision} onToggle={() => setOpen(open === v.revision ? null : v.revision)} onRestored={page.reload} />
          ))}</tbody>
        </table></div>
      )}
      <div className="row" style={{ marginTop: 8 }}>
        {cursor ? <button type="button" onClick={() => setCursor("")}>Newest</button> : null}
        {d.next ? <button type="button" onClick={() => setCursor(d.next!)} data-testid="history-older">Older</button> : null}
      </div>
    </section>
  );
}

function HistoryRow({ app, graph, v, open, onToggle, onRestored }: { app: string; graph: string; v: GraphVersion; open: boolean; onToggle: () => void; onRestored: () => void }) {
  return (
    <>
      <tr data-revision={v.revision}>
        <td>#{v.revision}{v.current ? <> <span className="badge good">current</span></> : null}</td>
        <td><Time ms={v.at} /></td>
        <td>{v.changedBy} <span className="muted small">via {v.via}</span></td>
        <td>{v.action}{v.version !== null ? ` · version ${v.version}` : ""}{v.restoredFrom !== null ? ` · from #${v.restoredFrom}` : ""}</td>
        <td className="small">{v.summary}</td>
        <td><button type="button" aria-expanded={open} onClick={onToggle} data-testid={`history-open-${v.revision}`}>{open ? "Close" : "Open"}</button></td>
      </tr>
      {open ? <tr><td colSpan={6}><Revision app={app} graph={graph} v={v} onRestored={onRestored} /></td></tr> : null}
    </>
  );
}

function Revision({ app, graph, v, onRestored }: { app: string; graph: string; v: GraphVersion; onRestored: () => void }) {
  const canWrite = useCanWrite();
  const rev = useLoad(() => api.revision(app, graph, v.revision), [app, graph, v.revision]);
  const [dry, setDry] = useState<DryRun | null>(null);
  const [err, setErr] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const review = async () => {
    setBusy(true); setErr(null);
    try { setDry(await api.restoreDryRun(app, graph, v.revision, null)); } catch (e) { setErr(e as ApiError); } finally { setBusy(false); }
  };
  const restore = async () => {
    if (!dry) return;
    setBusy(true); setErr(null);
    try {
      const res = await api.restore(app, graph, v.revision, dry.storedEtag ? { ifMatch: dry.storedEtag } : { ifNoneMatch: "*" });
      keepSaved(app, graph, res);
      setDry(null);
      onRestored();
      navigate(graphHref(app, graph, "", "saved=1"), false, true);
    } catch (e) {
      const ae = e as ApiError;
      setErr(ae);
      if (ae.status === 412) setDry(null);
    } finally { setBusy(false); }
  };
  if (rev.error && !rev.data) return <ErrorState error={rev.error} what={`revision ${v.revision}`} />;
  if (!rev.data) return <Loading />;
  return (
    <div data-testid="revision">
      <h3>Revision #{v.revision}: what it changed</h3>
      <DiffView diff={rev.data.diff} testid="revision-diff" />
      {rev.data.document !== null ? <details><summary className="small">The document as stored</summary><pre className="small">{JSON.stringify(rev.data.document, null, 2)}</pre></details> : null}
      {canWrite && !v.current && v.action !== "delete" ? (
        dry ? (
          <div className="card review" role="region" aria-label="Review the restore" data-testid="restore-review">
            <h4>Restoring #{v.revision} would change what runs now like this</h4>
            <DiffView diff={dry.diff} testid="restore-diff" />
            <Warnings warnings={dry.warnings} testid="restore-warnings" />
            <div className="row">
              <button type="button" className="primary" disabled={busy} onClick={restore} data-testid="restore-confirm">{busy ? "Restoring…" : `Confirm: restore #${v.revision} as version ${dry.version}`}</button>
              <button type="button" onClick={() => setDry(null)}>Cancel</button>
            </div>
          </div>
        ) : <button type="button" disabled={busy} onClick={review} data-testid="restore">{busy ? "Checking…" : `Restore #${v.revision}…`}</button>
      ) : null}
      {err ? err.status === 412 ? <div className="notice bad" role="alert" data-testid="restore-overtaken">The graph changed since the review ({storedBy(err.body)}); nothing was restored. Review the restore again.</div>
        : <ErrorState error={err} what="the restore" /> : null}
    </div>
  );
}
