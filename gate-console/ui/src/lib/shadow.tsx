// Shadow limits (issue 27): a candidate set of budgets runs beside the
// enforced document on the graph's live traffic and never refuses
// anything; gate-recorder reports per minute what it would have done. The
// node panel says "if enforced: …", and Enforce turns the candidate into
// the enforced limits in one edit — through the save flow, so the server's
// dry run (diff, warnings) is reviewed first and the write carries If-Match
// with the ETag of the document the page read.
import { useState } from "react";
import type { Shadow } from "../wire";
import { api, ApiError, type Loaded } from "./api";
import { SavePanel, type useSaveFlow } from "./save";
import { ErrorState, fmt, when } from "./ui";

type Flow = ReturnType<typeof useSaveFlow>;
type Doc = { version?: number; watch?: unknown; nodes?: Record<string, { budgets?: unknown[] } & Record<string, unknown>> } & Record<string, unknown>;

/**
 * The document that enforces the candidate: the stored document with each
 * candidate node's budgets replaced, one version higher, and out of Watch
 * (a Watch graph enforces nothing). Nothing else changes.
 */
export function enforceDoc(spec: unknown, shadow: Shadow): Doc {
  const doc = JSON.parse(JSON.stringify(spec ?? {})) as Doc;
  const nodes = { ...(doc.nodes ?? {}) };
  for (const n of shadow.nodes) {
    if (nodes[n.node]) nodes[n.node] = { ...nodes[n.node], budgets: JSON.parse(JSON.stringify(n.budgets)) as unknown[] };
  }
  doc.nodes = nodes;
  doc.version = (typeof doc.version === "number" ? doc.version : 0) + 1;
  delete doc.watch;
  return doc;
}

/** The candidate body of the node's current budgets (a starting point for the editor). */
export function candidateOf(spec: unknown, node: string): string {
  const budgets = (spec as Doc | undefined)?.nodes?.[node]?.budgets ?? [];
  return JSON.stringify({ nodes: { [node]: { budgets } } }, null, 2);
}

/** "if enforced: …" for one node, as the server says it (nothing when the node has no candidate). */
export function ShadowNote({ shadow, node }: { shadow: Shadow | null; node: string }) {
  const n = shadow?.set ? shadow.nodes.find((x) => x.node === node) : undefined;
  if (!shadow || !n) return null;
  const bad = n.ifEnforced.delayed > 0 || n.ifEnforced.backlog > 0;
  return <p className={`small ${bad ? "" : "muted"}`} data-testid="shadow-note"><span className="badge info">shadow</span> {n.sentence}</p>;
}

/**
 * The shadow card of a graph's detail page: the candidate per node with
 * "if enforced", its last minutes, and for writers Enforce (the save
 * flow's check, i.e. the dry run) and Stop.
 */
export function ShadowCard({ app, graph, spec, etag, shadow, canWrite, flow, onStop }: {
  app: string; graph: string; spec: unknown; etag: string | null; shadow: Loaded<Shadow>; canWrite: boolean; flow: Flow; onStop: () => void;
}) {
  const s = shadow.data?.set ? shadow.data : null;
  const missing = shadow.data !== null && !shadow.data.set;
  const off = shadow.error?.body?.code === "no-history";
  return (
    <section className="card" style={{ marginTop: 14 }} aria-labelledby="shadow-h" data-testid="shadow-card">
      <h2 id="shadow-h">Shadow limits</h2>
      <p className="small muted">A candidate set of budgets runs beside the enforced ones on live traffic. It never delays or refuses anything; once a minute gate-recorder says what it would have done.</p>
      {off ? <p className="small" data-testid="shadow-off">Shadow limits are off: they need the PostgreSQL history (PG_HOST).</p> : null}
      {shadow.error && !missing && !off && !s ? <ErrorState error={shadow.error} what="the shadow limits" /> : null}
      {missing && !s ? <p className="small muted" data-testid="shadow-none">No candidate is set.</p> : null}
      {s ? (
        <>
          <p className="small">Set {when(s.since)} by {s.setBy}; judged on {s.recording === "watch" ? "the Watch recording" : "the items each node forwards"}{s.evaluatedThrough ? `, evaluated through ${when(s.evaluatedThrough)}` : ", not evaluated yet"}.
            {!s.current ? <strong> The graph changed since it was set.</strong> : null}</p>
          <div className="tablewrap"><table data-testid="shadow-table">
            <thead><tr><th>node</th><th>candidate</th><th>if enforced</th><th className="num">delayed</th><th className="num">peak backlog</th><th className="num">longest delay</th></tr></thead>
            <tbody>{s.nodes.map((n) => (
              <tr key={n.node} data-node={n.node}>
                <td>{n.node}</td>
                <td className="small"><code>{JSON.stringify(n.budgets)}</code></td>
                <td className="small" data-testid="shadow-sentence">{n.sentence}</td>
                <td className="num">{fmt(n.ifEnforced.delayed)} of {fmt(n.ifEnforced.arrived)}
                  {n.ifEnforced.approximate > 0 ? <> <span className="badge warn" data-testid="shadow-approximate"
                    title={`${fmt(n.ifEnforced.approximate)} items were judged without their scope value or op`}>approximate</span></> : null}</td>
                <td className="num">{fmt(n.ifEnforced.peakBacklog)}</td>
                <td className="num">{fmt(Math.max(n.ifEnforced.delayMaxMs, n.ifEnforced.oldestWaitingMs) / 1000, 0)} s</td>
              </tr>
            ))}</tbody>
          </table></div>
          {s.nodes.some((n) => n.notes.length > 0) ? (
            <ul className="small" data-testid="shadow-notes">
              {s.nodes.flatMap((n) => n.notes.map((t, i) => <li key={`${n.node}-${i}`}><strong>{n.node}</strong>: {t}</li>))}
            </ul>
          ) : null}
          {s.unsupported.length ? <p className="small muted">Not judged: {s.unsupported.map((u) => `${u.node}/${u.budget} (${u.reason})`).join("; ")}.</p> : null}
          {canWrite ? (
            <div className="row" style={{ marginTop: 8 }}>
              <button type="button" className="primary" disabled={flow.busy || !etag} data-testid="enforce-shadow"
                onClick={() => { void flow.check({ app, graph, doc: enforceDoc(spec, s), create: false, etag }); }}>Enforce these limits…</button>
              <button type="button" disabled={flow.busy} onClick={onStop} data-testid="stop-shadow">Stop the shadow</button>
            </div>
          ) : null}
          <SavePanel flow={flow} verb="Enforce" />
          {flow.stage.kind === "failed" ? <ErrorState error={flow.stage.error} what="the enforced limits" /> : null}
        </>
      ) : null}
    </section>
  );
}

/** A writer's box to set (or replace) the candidate: the document's budget syntax per node. */
export function ShadowEditor({ app, graph, spec, node, onSet }: { app: string; graph: string; spec: unknown; node: string; onSet: () => void }) {
  const [text, setText] = useState(() => candidateOf(spec, node));
  const [err, setErr] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true); setErr(null);
    try {
      await api.setShadow(app, graph, JSON.parse(text));
      onSet();
    } catch (e) {
      setErr(e instanceof ApiError ? e : new ApiError(422, `the candidate is not JSON: ${(e as Error).message}`, null));
    } finally { setBusy(false); }
  };
  return (
    <details style={{ marginTop: 8 }}>
      <summary>Run a candidate as a shadow…</summary>
      <label className="field"><span className="name">Candidate budgets per node (the document's budget syntax)</span>
        <textarea rows={8} value={text} onChange={(e) => setText(e.target.value)} data-testid="shadow-editor" spellCheck={false} /></label>
      <button type="button" disabled={busy} onClick={() => { void submit(); }} data-testid="set-shadow">Run as shadow</button>
      {err ? <ErrorState error={err} what="the shadow candidate" /> : null}
    </details>
  );
}
