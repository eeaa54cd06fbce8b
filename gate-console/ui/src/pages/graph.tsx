import { useEffect, useState, type FormEvent } from "react";
import type { Explanation, GraphView, KeyLimit, NodeView, Shadow, StageCounters, StageView } from "../wire";
import { api, ApiError, useLoad } from "../lib/api";
import { Diagram } from "../lib/diagram";
import { stageKey, useLiveCounters } from "../lib/live";
import { explainQuery } from "../lib/explain";
import { graphHref, navigate, useQueryParam } from "../lib/router";
import { dropSaved, keepSaved, readSaved, storedBy, useSaveFlow } from "../lib/save";
import { ShadowCard, ShadowEditor, ShadowNote } from "../lib/shadow";
import { Warnings } from "../lib/diffview";
import { estimateQuality } from "../lib/settle";
import { ago, BudgetBar, CopyButton, Empty, ErrorState, fmt, Link, Loading, pct, Unknown, useBrokerUp, useCanWrite, useMe, when, windowText } from "../lib/ui";
import { HistoryPage } from "./history";
import { EditPage } from "./edit";
import { Guide } from "./guide";
import { Traffic, WatchPage, Why } from "./insight";
import { NO_RELAY } from "./targets";

type Sub = "" | "edit" | "clone" | "guide" | "watch" | "why" | "traffic" | "history";

export function GraphPages({ app, graph, sub }: { app: string; graph: string; sub: Sub }) {
  const tagged = useLoad(() => api.graphTagged(app, graph), [app, graph], 5000);
  const view = { ...tagged, data: tagged.data?.view ?? null };
  const isWatch = !!(view.data?.spec as { watch?: unknown } | undefined)?.watch;
  const tabs: [Sub, string][] = [["", "Detail"], ["guide", "Integration guide"], ...(isWatch || sub === "watch" || readSaved(app, graph)?.endedWatch ? [["watch", "Watch"] as [Sub, string]] : []), ["why", "Why is traffic waiting?"], ["traffic", "Traffic over time"], ["history", "History"], ["edit", "Edit"], ["clone", "Clone"]];
  const tabName = tabs.find(([s]) => s === sub)?.[1] ?? "Detail";
  useEffect(() => { document.title = `Gate · ${app}/${graph} · ${tabName}`; }, [app, graph, tabName]);
  return (
    <>
      <div className="spread" style={{ marginBottom: 4 }}>
        <div>
          <h1>{app}/{graph} {view.data ? <span className="muted small">v{view.data.version}</span> : null}{" "}
            {view.data ? <GraphState v={view.data} /> : null}</h1>
        </div>
      </div>
      <nav className="tabs" aria-label="graph pages">
        {tabs.map(([s, label]) => <Link key={s} to={graphHref(app, graph, s)} aria-current={sub === s ? "page" : undefined}>{label}</Link>)}
      </nav>
      {view.error && !view.data ? <ErrorState error={view.error} what="the graph" /> : null}
      {sub !== "edit" && sub !== "clone" ? <SavedNotice app={app} graph={graph} /> : null}
      {sub === "" ? (view.data ? <Detail initial={view.data} etag={tagged.data?.etag ?? null} /> : view.loading ? <Loading /> : null) : null}
      {sub === "history" ? <HistoryPage app={app} graph={graph} /> : null}
      {sub === "edit" ? <EditPage app={app} graph={graph} /> : null}
      {sub === "clone" ? <EditPage app={app} graph={graph} clone /> : null}
      {sub === "guide" && view.data ? <Guide view={view.data} /> : null}
      {sub === "watch" ? <WatchPage app={app} graph={graph} view={view.data} /> : null}
      {sub === "why" ? <Why app={app} graph={graph} /> : null}
      {sub === "traffic" ? <Traffic app={app} graph={graph} view={view.data} /> : null}
    </>
  );
}

/** The graph's state in the header: never "enforcing" while the broker is down, Watch and its end, ready for review, backoffs holding. */
function GraphState({ v }: { v: GraphView }) {
  const brokerUp = useBrokerUp();
  const w = (v.spec as { watch?: { durationSeconds: number; startedAt?: number } } | undefined)?.watch;
  const endsAt = w?.startedAt ? w.startedAt + w.durationSeconds * 1000 : null;
  const now = Date.now();
  const held = v.nodes.filter((n) => n.breaker && n.breaker.until > now).map((n) => n.node);
  return (
    <span data-testid="graph-state">
      {!v.running ? <span className="badge warn" data-testid="not-running">queued, no relay</span>
        : brokerUp === false ? <span className="badge bad" data-testid="state-unknown" title="the broker is not answering">state unknown: broker down</span>
          : w ? <span className="badge info">Watch</span> : <span className="badge good">enforcing</span>}
      {w && endsAt ? (endsAt <= now ? <> <span className="badge info" data-testid="ready-badge">ready for review</span></> : <> <span className="badge info" title={when(endsAt)}>ends {ago(endsAt)}</span></>) : null}
      {held.length ? <> <span className="badge bad" data-testid="held-badge">backoff: {held.join(", ")}</span></> : null}
    </span>
  );
}

/** The last save's warnings stay on the graph's pages until dismissed. */
function SavedNotice({ app, graph }: { app: string; graph: string }) {
  const [note, setNote] = useState(() => readSaved(app, graph));
  if (!note || (!note.warnings.length && !note.endedWatch)) return null;
  return (
    <div data-testid="saved-warnings">
      {note.endedWatch ? <div className="notice" data-testid="watch-ended-note">Limits are active. The summary of the Watch session they replaced stays readable: <Link to={graphHref(app, graph, "watch")}>Watch summary</Link>.</div> : null}
      <Warnings warnings={note.warnings} testid="kept-warnings" title={`Saved version ${note.version} ${ago(note.at)}; Gate warned`} />
      <button type="button" className="small" onClick={() => { dropSaved(app, graph); setNote(null); }} data-testid="dismiss-warnings">Dismiss the warnings</button>
    </div>
  );
}

/** Delete graph: the typed name confirms; the DELETE carries If-Match, so only what is shown is deleted. */
function DeleteGraph({ app, graph, etag }: { app: string; graph: string; etag: string | null }) {
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<ApiError | null>(null);
  const name = `${app}/${graph}`;
  const del = async () => {
    setBusy(true); setErr(null);
    try {
      await api.remove(app, graph, etag);
      navigate(`/graphs?deleted=${encodeURIComponent(name)}`, false, true);
    } catch (e) { setErr(e as ApiError); } finally { setBusy(false); }
  };
  if (!open) return <button type="button" className="danger" onClick={() => setOpen(true)} data-testid="delete-graph">Delete graph</button>;
  return (
    <section className="card" role="region" aria-label="Delete the graph" data-testid="delete-confirm" style={{ marginBottom: 14 }}>
      <h2>Delete {name}?</h2>
      <p className="small">The relays stop running it, its stored document is removed and producers pushing to it are refused. Its queues and their messages stay on the broker. {etag ? "Only the version shown here is deleted: a change made meanwhile is refused." : ""}</p>
      <label className="field"><span className="name">Type {name} to confirm</span>
        <input value={typed} onChange={(e) => setTyped(e.target.value)} data-testid="delete-typed" autoComplete="off" autoFocus /></label>
      <div className="row" style={{ marginTop: 8 }}>
        <button type="button" className="danger" disabled={busy || typed.trim() !== name} onClick={del} data-testid="delete-confirm-button">{busy ? "Deleting…" : `Delete ${name}`}</button>
        <button type="button" onClick={() => { setOpen(false); setTyped(""); setErr(null); }}>Cancel</button>
      </div>
      {err ? err.status === 412 ? <div className="notice bad" role="alert" data-testid="delete-overtaken">{name} changed since this page read it ({storedBy(err.body)}); nothing was deleted. Reload the page, look at the change, and delete again if you still mean to.</div>
        : <ErrorState error={err} what="the deletion" /> : null}
    </section>
  );
}

function Detail({ initial, etag }: { initial: GraphView; etag: string | null }) {
  const app = initial.application, graph = initial.graph;
  const [liveP, setLiveP] = useQueryParam("live", "1");
  const [node, setNode] = useQueryParam("node", initial.nodes[0]?.node ?? "");
  const [saved] = useQueryParam("saved", "");
  const canWrite = useCanWrite();
  const brokerUp = useBrokerUp();
  const live = liveP === "1";
  const stream = useLiveCounters(app, graph, live);
  // Polling: the view (budgets, lag, breaker) every 2 s while live or as the fallback; never while paused.
  const view = useLoad(() => api.graph(app, graph), [app, graph], !live ? 0 : stream.state === "live" ? 5000 : 2000);
  const v = view.data ?? initial;
  const traces = useLoad(() => api.traces(100), [], live ? 5000 : 0);
  // Shadow limits: re-read each half minute (gate-recorder evaluates once a minute).
  const shadow = useLoad(() => api.shadow(app, graph), [app, graph], 30000);
  const enforce = useSaveFlow((res) => {
    keepSaved(app, graph, res);
    // The candidate is now the enforced limits: the shadow has done its job.
    void api.dropShadow(app, graph).catch(() => undefined).finally(() => { shadow.reload(); view.reload(); });
  });
  const counters = (s: StageView): StageCounters => (stream.state === "live" && stream.stages[stageKey(s)]) || s.counters;
  const perNode: Record<string, StageCounters> = {};
  for (const s of v.stages) {
    const c = counters(s);
    const cur = perNode[s.node];
    perNode[s.node] = cur ? { ...cur, forwarded: cur.forwarded + c.forwarded, commits: cur.commits + c.commits } : { ...c };
  }
  const sel = v.nodes.find((n) => n.node === node) ?? v.nodes[0];
  const denials = (traces.data ?? []).filter((t) => t.application === app && t.graph === graph).slice(0, 20);
  return (
    <>
      {saved ? <div className="notice good" role="status">Saved. The relay runs the new version within a second or two.</div> : null}
      {!v.running ? (
        <div className="notice warn" role="status" data-testid="no-relay-note"><strong>Pushes are {NO_RELAY}.</strong> They move once a gate-relay replica runs this graph (check that gate-relay is up and reaches the broker); <Link to={graphHref(app, graph, "why")}>Why is traffic waiting?</Link> says what else to check.</div>
      ) : null}
      {view.error ? <ErrorState error={view.error} what="the graph (showing the last answer)" /> : null}
      <div className="row" style={{ marginBottom: 12 }}>
        <button type="button" aria-pressed={live} onClick={() => setLiveP(live ? "0" : "1")} data-testid="live-toggle">
          <span className={`live-dot${live && brokerUp !== false ? "" : " off"}`} aria-hidden="true" /> {live ? "Live" : "Paused"}
        </button>
        <span className="small muted" data-testid="live-state">
          {brokerUp === false ? <strong data-testid="live-unknown">the broker is not answering: budgets, lags and backoffs below are unknown</strong> : !live ? "paused: nothing refreshes" : stream.state === "live" ? `streaming stage counters${stream.at ? ` · ${new Date(stream.at).toLocaleTimeString("en-GB")}` : ""}` : stream.state === "connecting" ? "connecting…" : `polling every 2 s${stream.reason ? ` (${stream.reason})` : ""}`}
        </span>
      </div>
      <section className="card" style={{ marginBottom: 14 }}>
        <h2>Diagram</h2>
        <Diagram view={v} selected={sel?.node ?? ""} onSelect={setNode} counters={perNode} />
      </section>
      <div className="grid2">
        {sel ? <NodePanel view={v} n={sel} onChanged={view.reload} shadow={shadow.data} /> : null}
        <section className="card">
          <h2>Recent denials</h2>
          {traces.error ? <ErrorState error={traces.error} what="denials" /> : null}
          {traces.data && denials.length === 0 ? <Empty title="No recent denials">A denial is a window cut short because a budget was full; nothing is lost, it waits.</Empty> : null}
          {denials.length ? <div className="tablewrap"><table><thead><tr><th>at</th><th>node</th><th>path</th><th>budget</th><th>outcome</th></tr></thead>
            <tbody data-testid="denials">{denials.map((t, i) => <tr key={i}><td>{when(t.at)}</td><td>{t.node}</td><td>{t.path}</td><td>{t.budgetId || "—"}</td><td>{t.outcome}{t.source === "history" ? <span className="small muted"> (history)</span> : null}</td></tr>)}</tbody></table></div> : null}
        </section>
      </div>
      <ShadowCard app={app} graph={graph} spec={v.spec} etag={etag} shadow={shadow} canWrite={canWrite} flow={enforce}
        onStop={() => { void api.dropShadow(app, graph).catch(() => undefined).finally(shadow.reload); }} />
      {canWrite && shadow.error?.body?.code !== "no-history" && sel ? <ShadowEditor key={sel.node} app={app} graph={graph} spec={v.spec} node={sel.node} onSet={shadow.reload} /> : null}
      <section className="card" style={{ marginTop: 14 }}>
        <h2>Stages</h2>
        <p className="small muted">One stage per hop of each path. forwarded / commits is what explains a stage's throughput (items per settle transaction); wedged is the one to alert on.</p>
        <div className="tablewrap"><table data-testid="stages-table">
          <thead><tr><th>path · hop</th><th>node</th><th className="num">lag</th><th className="num">popped</th><th className="num">admitted</th><th className="num">forwarded</th><th className="num">commits</th><th className="num">fwd/commit</th><th className="num">deferred</th><th className="num">parked</th><th className="num">released</th><th className="num">wedged</th><th>last refusal</th></tr></thead>
          <tbody>{v.stages.map((s) => {
            const c = counters(s);
            return (
              <tr key={stageKey(s)} data-stage={stageKey(s)}>
                <td>{s.path} · {s.hop}</td><td>{s.node}</td><td className="num">{s.lag === null || brokerUp === false ? <Unknown why="the broker could not be read" /> : fmt(s.lag)}</td><td className="num">{fmt(c.popped)}</td><td className="num">{fmt(c.admitted)}</td>
                <td className="num" data-testid="forwarded">{fmt(c.forwarded)}</td><td className="num">{fmt(c.commits)}</td><td className="num">{c.commits ? fmt(c.forwarded / c.commits, 1) : "—"}</td>
                <td className="num">{fmt(c.deferred)}</td><td className="num">{fmt(c.parked)}</td><td className="num">{fmt(c.released)}</td>
                <td className="num">{c.wedged ? <span className="badge bad">{c.wedged}</span> : 0}</td>
                <td>{s.lastRefusal ? `${s.lastRefusal.budget} · ${when(s.lastRefusal.at)}` : "—"}</td>
              </tr>
            );
          })}</tbody>
        </table></div>
      </section>
      <Plan v={v} />
      {canWrite ? <section className="card danger-zone" style={{ marginTop: 14 }} aria-label="Delete"><DeleteGraph app={app} graph={graph} etag={etag} /></section> : null}
    </>
  );
}

function NodePanel({ view, n, onChanged, shadow }: { view: GraphView; n: NodeView; onChanged: () => void; shadow: Shadow | null }) {
  const canWrite = useCanWrite();
  const me = useMe();
  const [secs, setSecs] = useState("60");
  const [err, setErr] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  // Apply and Lift stop or release traffic: each asks first, with an optional reason recorded in the annotation.
  const [asking, setAsking] = useState<"" | "apply" | "lift">("");
  const [reason, setReason] = useState("");
  const brokerUp = useBrokerUp();
  const held = n.breaker && n.breaker.until > Date.now() ? n.breaker : null;
  const watching = view.watching || !!(view.spec as { watch?: unknown } | undefined)?.watch;
  const act = async (f: () => Promise<unknown>) => { setBusy(true); setErr(null); try { await f(); setAsking(""); setReason(""); onChanged(); } catch (e) { setErr(e as ApiError); } finally { setBusy(false); } };
  const unscoped = n.budgets.filter((b) => !b.scopeBy);
  const seconds = Math.min(3600, Math.max(1, Math.round(Number(secs)) || 1));
  const confirmBox = (what: "apply" | "lift") => (
    <div className="notice warn" role="region" aria-label={what === "apply" ? "Confirm the backoff" : "Confirm lifting the backoff"} data-testid="backoff-confirm">
      <strong>{what === "apply" ? `Hold every path through ${n.node} for ${seconds} s?` : `Lift the backoff of ${n.node} now?`}</strong>
      <div className="small">{what === "apply" ? "Its window is spent at once: nothing is admitted through this node until the hold ends or is lifted." : "Its counters start a fresh window: traffic the vendor asked to hold flows again at once."}</div>
      <label className="field"><span className="name">Reason (optional, recorded in the annotation)</span>
        <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={256} data-testid="backoff-reason" placeholder="vendor 429 storm, ticket…" /></label>
      <div className="row" style={{ marginTop: 6 }}>
        <button type="button" className="danger" disabled={busy} data-testid="backoff-confirm-button"
          onClick={() => act(() => what === "apply" ? api.backoff(view.application, view.graph, n.node, seconds, me?.email ?? "console", reason.trim()) : api.lift(view.application, view.graph, n.node, reason.trim()))}>
          {what === "apply" ? "Apply backoff" : "Lift backoff"}</button>
        <button type="button" onClick={() => { setAsking(""); setReason(""); }} data-testid="backoff-cancel">Cancel</button>
      </div>
    </div>
  );
  return (
    <section className="card" data-testid="node-panel" aria-labelledby="np-h">
      <h2 id="np-h">Node {n.node}</h2>
      <dl className="kv small">
        <dt>incoming</dt><dd>{n.ingressQueue ?? "interior"}{n.ingressQueue ? (n.ingressOwnedByGate ? " (Gate-owned)" : " (yours)") : ""}{n.httpPush ? " · HTTP push" : ""}</dd>
        <dt>outgoing</dt><dd>{n.egressQueue ?? "—"}{n.egressGroup ? ` · group ${n.egressGroup}` : ""}</dd>
        <dt>waiting</dt><dd>{brokerUp === false ? <Unknown /> : <>{fmt(n.waiting_for_budget)} for budget · {fmt(n.waiting_for_workers)} for your workers</>}</dd>
      </dl>
      <ShadowNote shadow={shadow} node={n.node} />
      <h3>Backoff</h3>
      {brokerUp === false ? <p className="small" data-testid="backoff-unknown">Backoff: <Unknown /> (the broker holds the record and is not answering).</p> : held ? (
        <div className="notice warn" data-testid="backoff-active">Backoff holding until {when(held.until)} ({held.retryAfterSeconds} s{held.by ? `, by ${held.by}` : ""}): every path through {n.node} waits.
          {canWrite && asking !== "lift" ? <div style={{ marginTop: 6 }}><button type="button" className="danger" disabled={busy} onClick={() => setAsking("lift")} data-testid="lift">Lift backoff now…</button></div> : null}
        </div>
      ) : <p className="small muted" data-testid="backoff-none">No backoff. {watching ? "In Watch no budget is enforced, so there is no window to hold: Gate relays everything." : unscoped.length ? "A vendor's Retry-After reported to the backoff route spends this node's window." : n.budgets.length ? "This node has only per-key budgets, so it has no breaker." : "This node has no budgets, so it has no window to hold."}</p>}
      {canWrite && held && asking === "lift" ? confirmBox("lift") : null}
      {canWrite && !held && unscoped.length && !watching && brokerUp !== false ? (
        asking === "apply" ? confirmBox("apply") : (
          <div className="row">
            <label className="field"><span className="name">Retry-After (s)</span><input value={secs} onChange={(e) => setSecs(e.target.value)} inputMode="numeric" data-testid="backoff-seconds" style={{ width: 90 }} /></label>
            <button type="button" disabled={busy} onClick={() => setAsking("apply")} data-testid="backoff">Apply backoff…</button>
          </div>
        )
      ) : null}
      {err ? <ErrorState error={err} what="the backoff" /> : null}
      <ExplainBox view={view} n={n} />
      <Estimates n={n} />
      <h3>Budgets</h3>
      {n.budgets.length === 0 ? <p className="small muted">{view.watching ? "No budgets are enforced: the graph is in Watch." : "No budgets."}</p> : (
        <div className="tablewrap"><table>
          <thead><tr><th>budget</th><th>limit</th><th>used now</th><th>utilisation</th><th>ceilings per path</th></tr></thead>
          <tbody>{n.budgets.map((b) => (
            <tr key={b.id}>
              <td>{b.id} {b.confidence === "assumed" ? <span className="badge warn">assumed</span> : null} {b.sharedKey ? <span className="badge info" title="shared across the application">shared {b.sharedKey}</span> : null}
                {b.scopeBy ? <div className="small muted">per {b.scopeBy}</div> : null}</td>
              <td>{windowText(b.count, b.timeMs)}<div className="small muted">{fmt(b.countSub)} per {fmt(b.windowSubSeconds, 3)} s × {b.subWindows}</div></td>
              <td>{b.value === null ? (b.scopeBy ? <span className="muted">per key</span> : <Unknown />) : fmt(b.value)}</td>
              <td>{b.utilisation === null && !b.scopeBy && brokerUp === false ? <Unknown /> : <><BudgetBar value={b.utilisation} /> <span className="small">{pct(b.utilisation)}</span></>}</td>
              <td className="small">{Object.entries(b.ceilings).map(([p, c]) => `${p}: ${fmt(c)}`).join(", ")}</td>
            </tr>
          ))}</tbody>
        </table></div>
      )}
      {n.budgets.filter((b) => b.scopeBy).map((b) => <KeyLimitsBox key={b.id} view={view} node={n.node} budget={b.id} scopeBy={b.scopeBy ?? ""} />)}
    </section>
  );
}

/** KEY_PAGE is how many runtime limits per key one page shows. */
const KEY_PAGE = 20;

/** A scoped budget's limits per key: the document's and, paged, the ones set at runtime (which win for the same value). */
function KeyLimitsBox({ view, node, budget, scopeBy }: { view: GraphView; node: string; budget: string; scopeBy: string }) {
  const [trail, setTrail] = useState<string[]>([""]);
  const after = trail[trail.length - 1];
  const page = useLoad(() => api.keyLimits(view.application, view.graph, node, budget, after, KEY_PAGE), [view.application, view.graph, node, budget, after], 10_000);
  const d = page.data;
  const row = (k: KeyLimit) => (
    <tr key={k.source + ":" + k.value} data-testid="key-limit">
      <td><code>{k.value}</code></td><td className="num">{windowText(k.count, k.timeMs)}</td>
      <td className="num">{fmt(k.ceiling)}</td><td>{k.source === "runtime" ? `runtime${k.at ? `, set ${when(k.at)}` : ""}` : "document"}{k.source === "runtime" && k.document !== null ? <span className="small muted"> (document: {fmt(k.document)})</span> : null}</td>
    </tr>
  );
  return (
    <section aria-label={`limits per key of budget ${budget}`} data-testid="key-limits">
      <h3>Limits per key — {budget} (per {scopeBy})</h3>
      {page.error ? <ErrorState error={page.error} what="the limits per key" /> : !d ? <Loading /> : (
        <>
          <p className="small muted">Every other value counts {windowText(d.default, d.timeMs)}. A limit set at runtime wins over the document's for the same value and reaches every relay within a second.</p>
          {d.document.length === 0 && d.runtime.length === 0 ? <p className="small muted" data-testid="key-limits-none">No value has its own limit{trail.length > 1 ? " on this page" : ""}.</p> : (
            <div className="tablewrap"><table className="small">
              <thead><tr><th>{scopeBy}</th><th>limit</th><th>per sub-window</th><th>from</th></tr></thead>
              <tbody>{d.runtime.map(row)}{d.document.map(row)}</tbody>
            </table></div>
          )}
          {trail.length > 1 || d.nextAfter ? (
            <div className="row" data-testid="key-limits-pager">
              <button type="button" disabled={trail.length <= 1} onClick={() => setTrail(trail.slice(0, -1))}>Previous</button>
              <button type="button" disabled={!d.nextAfter} onClick={() => setTrail([...trail, d.nextAfter])} data-testid="key-limits-next">Next</button>
            </div>
          ) : null}
        </>
      )}
    </section>
  );
}

/** "Cost estimates": how the settled actual costs compare with what the relays charged (POST …/settle). */
function Estimates({ n }: { n: NodeView }) {
  const q = estimateQuality(n.settle);
  if (!n.settle) {
    return null;
  }
  const badge = q.tone === "good" ? <span className="badge good">close</span> : q.tone === "over" ? <span className="badge warn">high</span> : q.tone === "under" ? <span className="badge warn">low</span> : null;
  return (
    <>
      <h3>Cost estimates {badge}</h3>
      <p className="small" data-testid="settle-quality">{q.headline}{n.settle && n.settle.until ? <span className="muted"> Counted until {when(n.settle.until)}.</span> : null}</p>
      {q.hint ? <p className="small muted">{q.hint}</p> : null}
    </>
  );
}

/** "Why is this item waiting?": one item — by its transaction id, or by scope value (and op, partition) — explained by the server in a sentence, with every counter it would charge. */
function ExplainBox({ view, n }: { view: GraphView; n: NodeView }) {
  const scoped = n.budgets.filter((b) => b.scopeBy);
  const ops = [...new Set(n.budgets.flatMap((b) => b.whenOp).filter((o) => o !== "*"))];
  const [scope, setScope] = useState("");
  const [op, setOp] = useState("");
  const [partition, setPartition] = useState("");
  const [txn, setTxn] = useState("");
  const [ans, setAns] = useState<Explanation | null>(null);
  const [err, setErr] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const ask = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true); setErr(null);
    try { setAns(await api.explain(view.application, view.graph, n.node, explainQuery({ txn, scope, op, partition, scoped: scoped.length > 0 }))); } catch (x) { setAns(null); setErr(x as ApiError); } finally { setBusy(false); }
  };
  return (
    <>
      <h3>Why is this item waiting?</h3>
      <form className="row" onSubmit={ask} data-testid="explain-form" role="search" aria-label={`explain an item at node ${n.node}`}>
        {scoped.length ? <label className="field"><span className="name">{scoped.map((b) => b.scopeBy).filter((v, i, a) => a.indexOf(v) === i).join(" / ")}</span><input value={scope} onChange={(e) => setScope(e.target.value)} placeholder="scope value" data-testid="explain-scope" /></label> : null}
        {ops.length ? <label className="field"><span className="name">op</span><select value={op} onChange={(e) => setOp(e.target.value)} data-testid="explain-op"><option value="">any op</option>{ops.map((o) => <option key={o} value={o}>{o}</option>)}</select></label> : null}
        <label className="field"><span className="name">partition</span><input value={partition} onChange={(e) => setPartition(e.target.value)} placeholder="optional" data-testid="explain-partition" style={{ width: 120 }} disabled={txn.trim() !== ""} /></label>
        <label className="field"><span className="name">or transaction id</span><input value={txn} onChange={(e) => setTxn(e.target.value)} placeholder="the push's txn" data-testid="explain-txn" style={{ width: 160 }} /></label>
        <button type="submit" disabled={busy} data-testid="explain">Explain</button>
      </form>
      {err ? <ErrorState error={err} what="the explanation" /> : null}
      {ans ? (
        <div className="notice" data-testid="explain-answer">
          <p data-testid="explain-sentence">{ans.sentence.charAt(0).toUpperCase() + ans.sentence.slice(1)}.</p>
          {ans.transactionId && ans.pushedAt ? <p className="small muted" data-testid="explain-item">Item {ans.transactionId}: pushed to {ans.pushedTo} at {when(ans.pushedAt)}, partition {ans.partition}{ans.scope ? `, scope ${ans.scope}` : ""}{ans.op ? `, op ${ans.op}` : ""}.</p> : null}
          <div className="tablewrap"><table className="small">
            <thead><tr><th>counter</th><th>kind</th><th>used</th><th>frees</th><th></th></tr></thead>
            <tbody>{ans.counters.map((c) => (
              <tr key={c.key} data-binds={c.binds ? "yes" : "no"}>
                <td>{c.budget}{c.binds ? <span className="badge warn"> binds</span> : null}</td><td>{c.kind}</td>
                <td className="num">{fmt(c.value)} of {fmt(c.ceiling)}{c.widest > c.ceiling ? ` (widest ${fmt(c.widest)})` : ""}</td>
                <td>{c.freesAt ? when(c.freesAt) : "—"}</td><td>{c.fits ? "room" : c.reason}</td>
              </tr>
            ))}</tbody>
          </table></div>
          {ans.unjudged.length ? <p className="small muted">Not judged without a scope value: {ans.unjudged.join(", ")}.</p> : null}
        </div>
      ) : null}
    </>
  );
}

function Plan({ v }: { v: GraphView }) {
  const queues = new Map<string, string>();
  for (const n of v.nodes) {
    if (n.ingressQueue) queues.set(n.ingressQueue, n.ingressOwnedByGate ? "ingress (Gate-owned)" : "ingress (yours)");
    if (n.egressQueue) queues.set(n.egressQueue, "egress");
  }
  for (const s of v.stages) { if (!queues.has(s.source)) queues.set(s.source, "interior"); for (const d of s.destinations) if (!queues.has(d)) queues.set(d, "interior"); }
  return (
    <section className="card" style={{ marginTop: 14 }} data-testid="plan">
      <h2>Compiled plan</h2>
      <div className="grid2">
        <div><h3>Queues</h3><div className="tablewrap"><table><tbody>{[...queues].map(([q, k]) => <tr key={q}><td><code>{q}</code><CopyButton text={q} what={`queue ${q}`} /></td><td className="muted">{k}</td></tr>)}</tbody></table></div></div>
        <div><h3>Consumer groups</h3><div className="tablewrap"><table><tbody>{v.stages.map((s) => <tr key={stageKey(s)}><td><code>{s.group}</code></td><td className="muted small">on {s.source} · batch {s.batch} · {s.concurrency} worker{s.concurrency === 1 ? "" : "s"}</td></tr>)}</tbody></table></div></div>
        <div><h3>kv keys</h3><div className="tablewrap"><table><tbody>{v.nodes.flatMap((n) => n.budgets.map((b) => <tr key={n.node + b.id}><td><code>{b.key}</code><CopyButton text={b.key} what={`key ${b.key}`} /></td><td className="muted small">{n.node} · {b.id}{b.scopeBy ? " (+ per-key suffix)" : ""}</td></tr>))}</tbody></table></div>
          <p className="small muted">namespace {v.namespace}{v.counters ? ` · roll-ups every ${v.counters} s` : " · roll-ups off"}</p></div>
      </div>
    </section>
  );
}
