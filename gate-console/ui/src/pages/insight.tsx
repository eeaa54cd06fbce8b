// Watch, "Why is traffic waiting?" and "Traffic over time": read-only pages
// over the recorder and history routes (gate-runtime.md §5.4, §6.1–6.3).
import { useMemo, useState } from "react";
import type { Finding, GraphSimulation, GraphView, Simulation, Snapshot, VendorComparison, VendorSpan } from "../wire";
import { api, ApiError, useLoad } from "../lib/api";
import { TimeChart, type Series } from "../lib/chart";
import type { GraphDoc } from "../lib/doc";
import { keepTried, readDraft } from "../lib/draft";
import { graphHref, useQueryParam } from "../lib/router";
import { absolute, duration, Empty, ErrorState, fmt, Link, Loading, Stat, useCanWrite, when } from "../lib/ui";

export function WatchPage({ app, graph, view }: { app: string; graph: string; view: GraphView | null }) {
  const w = useLoad(() => api.watch(app, graph), [app, graph], 15000);
  const spec = view?.spec as GraphDoc | undefined;
  const canWrite = useCanWrite();
  return (
    <>
      {spec?.watch ? (
        <div className="spread">
          <p className="sub">Watch for {duration(spec.watch.durationSeconds)}: Gate relays everything and charges no budget; limits in the document stay inactive.</p>
          {canWrite ? <Link to={graphHref(app, graph, "edit", "mode=enforce")} className="button primary" data-testid="configure-limits">Configure limits</Link> : null}
        </div>
      ) : view && w.data?.endedAt ? <div className="notice" data-testid="watch-ended">Watch ended {when(w.data.endedAt)}, when limits were configured: below is the summary of that session, kept in the change history.</div>
        : view && !w.loading ? <div className="notice">This graph is enforcing limits, not in Watch.</div> : null}
      {w.error ? <ErrorState error={w.error} what="the Watch summary" /> : null}
      {w.loading && !w.data ? <Loading /> : null}
      {w.data ? (
        <>
          <div>
            <div>
              <p className="sub">{w.data.endedAt ? `Watched from ${when(w.data.startedAt)} until ${when(Math.min(w.data.endsAt, w.data.endedAt))}` : `Watching since ${when(w.data.startedAt)} until ${when(w.data.endsAt)}`}: {fmt(w.data.minutes)} complete minute{w.data.minutes === 1 ? "" : "s"}{w.data.endedAt ? "" : " so far. Gate relays everything and charges no budget"}.</p>
              {w.data.endedAt ? null : w.data.ready ? <div className="notice good" data-testid="watch-ready"><strong>Ready for review.</strong> Recording stopped at the deadline; traffic keeps flowing in Watch until you configure limits.</div> : <span className="badge info" data-testid="watch-recording">recording</span>}
            </div>
          </div>
          <div className="card tablewrap">
            <table data-testid="watch-table">
              <thead><tr><th>node</th><th className="num">relayed items</th><th className="num">cost</th><th className="num">avg cost / s</th><th className="num">peak cost / min</th><th className="num">minutes</th></tr></thead>
              <tbody>{w.data.nodes.map((n) => (
                <tr key={n.node} data-node={n.node}><td>{n.node}</td><td className="num" data-testid="watch-admitted">{fmt(n.traffic.admitted)}</td><td className="num">{fmt(n.traffic.cost)}</td>
                  <td className="num">{fmt(n.traffic.averageCostPerSecond, 2)}</td><td className="num">{fmt(n.traffic.peakCostPerMinute)}</td><td className="num">{fmt(n.traffic.recordedMinutes)}</td></tr>
              ))}</tbody>
            </table>
            <p className="small muted">Complete minutes only. Observed traffic describes demand; it does not prove the provider's quota or show bursts shorter than a minute.</p>
          </div>
        </>
      ) : null}
      {spec && view ? <TryLimit app={app} graph={graph} spec={spec} version={view.version} /> : null}
    </>
  );
}

/** Which document a whole-graph simulation replayed. */
type Simulated = { r: GraphSimulation; source: "draft" | "saved" };

function TryLimit({ app, graph, spec, version }: { app: string; graph: string; spec: GraphDoc; version: number }) {
  const nodes = Object.keys(spec.nodes);
  const [node, setNode] = useQueryParam("node", nodes[0] ?? "");
  // The unsaved draft of this graph (Configure limits, or any edit not yet saved), made from the stored version.
  const draft = useMemo(() => readDraft(app, graph, version), [app, graph, version]);
  const draftDoc = draft?.doc as GraphDoc | undefined;
  const [source, setSource] = useState<"draft" | "saved">("draft");
  const replay = draft && source === "draft" ? "draft" : "saved";
  const unconditional = (d: GraphDoc | undefined) => d?.nodes?.[node]?.budgets?.find((b) => !b.scopeBy && !b.whenOp);
  const fromDraft = unconditional(draftDoc);
  const first = fromDraft ?? unconditional(spec);
  const [count, setCount] = useState(String(first?.count ?? 100));
  const [timeMs, setTimeMs] = useState(String(first?.timeMs ?? 1000));
  const [sub, setSub] = useState(first?.subWindows ? String(first.subWindows) : "");
  const [minutes, setMinutes] = useState("60");
  const [res, setRes] = useState<Simulation | null>(null);
  const [err, setErr] = useState<ApiError | null>(null);
  const [all, setAll] = useState<Simulated | null>(null);
  const [allErr, setAllErr] = useState<ApiError | null>(null);
  const run = async () => {
    setErr(null); setRes(null);
    try {
      const q = { node, count: Number(count), timeMs: Number(timeMs), subWindows: sub ? Number(sub) : undefined, minutes: Number(minutes) };
      setRes(await api.simulate(app, graph, q));
      // Configure limits starts from the last limit tried here.
      keepTried(app, graph, { node: q.node, count: q.count, timeMs: q.timeMs, subWindows: q.subWindows ?? null, at: Date.now() });
    }
    catch (e) { setErr(e as ApiError); }
  };
  const runAll = async () => {
    // The whole graph: the chosen candidate (the unsaved draft, else the stored document)
    // compiled and replayed by the server through its plan; nothing is saved.
    const chosen = replay;
    setAllErr(null); setAll(null);
    try { setAll({ r: await api.simulateGraph(app, graph, chosen === "draft" ? draft!.doc : spec, Number(minutes)), source: chosen }); }
    catch (e) { setAllErr(e as ApiError); }
  };
  return (
    <section className="card" style={{ marginTop: 14 }} data-testid="try-limit">
      <h2>Try a limit</h2>
      <p className="small muted">Replays the recorded traffic against one global allowance, without changing the graph: FIFO, an empty queue at the start, all arrivals of a second together. One full-share path and a fixed cost only.</p>
      <div className="fields">
        <label className="field"><span className="name">node</span><select value={node} onChange={(e) => setNode(e.target.value)}>{nodes.map((n) => <option key={n}>{n}</option>)}</select></label>
        <label className="field"><span className="name">count</span><input value={count} onChange={(e) => setCount(e.target.value)} inputMode="numeric" data-testid="sim-count" title={fromDraft ? "prefilled from your unsaved draft" : undefined} /></label>
        <label className="field"><span className="name">window (ms)</span><input value={timeMs} onChange={(e) => setTimeMs(e.target.value)} inputMode="numeric" /></label>
        <label className="field"><span className="name">sub-windows</span><input value={sub} onChange={(e) => setSub(e.target.value)} inputMode="numeric" placeholder="default" /></label>
        <label className="field"><span className="name">replay minutes</span><select value={minutes} onChange={(e) => setMinutes(e.target.value)}>{["15", "60", "360", "1440"].map((m) => <option key={m} value={m}>{duration(Number(m) * 60)}</option>)}</select></label>
      </div>
      {draft ? (
        <div className="notice" style={{ marginTop: 8 }} data-testid="sim-draft">
          You have an unsaved draft of this graph: version {draftDoc?.version ?? "?"}, {draftDoc?.watch ? "still in Watch" : "enforcing limits"}, last edited {when(draft.at)}.{" "}
          <Link to={graphHref(app, graph, "edit")}>Continue editing</Link>
          <div className="row" role="radiogroup" aria-label="document the whole-graph simulation replays" style={{ marginTop: 6 }}>
            <span>Simulate the whole graph replays:</span>
            <label><input type="radio" name="sim-source" checked={replay === "draft"} onChange={() => setSource("draft")} data-testid="sim-source-draft" /> your unsaved draft</label>
            <label><input type="radio" name="sim-source" checked={replay === "saved"} onChange={() => setSource("saved")} data-testid="sim-source-saved" /> the saved document (version {spec.version})</label>
          </div>
        </div>
      ) : (
        <p className="small muted" data-testid="sim-no-draft">Simulate the whole graph replays the saved document (version {spec.version}). To simulate limits before saving them, edit them in Configure limits and come back here.</p>
      )}
      <div className="row" style={{ marginTop: 8 }}>
        <button type="button" className="primary" onClick={run} data-testid="sim-run">Try this limit</button>
        <button type="button" onClick={runAll} data-testid="sim-all">Simulate the whole graph</button>
      </div>
      {err ? <ErrorState error={err} what="the simulation" /> : null}
      {res ? <SimResult r={res} /> : null}
      {allErr ? <ErrorState error={allErr} what="the whole-graph simulation" /> : null}
      {all ? <GraphSimResult r={all.r} source={all.source} /> : null}
    </section>
  );
}

function GraphSimResult({ r, source }: { r: GraphSimulation; source: "draft" | "saved" }) {
  const left = r.nodes.reduce((sum, n) => sum + n.finalBacklog, 0);
  return (
    <div style={{ marginTop: 12 }} data-testid="sim-all-result" data-source={source}>
      <p data-testid="sim-all-source"><strong>{source === "draft" ? `Simulated your unsaved draft (version ${r.version})` : `Simulated the saved document (version ${r.version})`}</strong>
        {source === "draft" ? " — nothing was saved; save it in Configure limits to make it run." : ""}</p>
      <div className="grid">
        <Stat label="items replayed" value={fmt(r.items)} hint={`version ${r.version}`} testid="sim-all-items" />
        <Stat label="delivered" value={fmt(r.delivered)} hint="fan-out copies count each" testid="sim-all-delivered" />
        <Stat label="delayed" value={fmt(r.delayedItems)} testid="sim-all-delayed" />
        <Stat label="left at the end" value={left === 0 ? "none" : fmt(left)}
          hint={r.drainSeconds === null ? `clears in over ${duration(r.drainLimitSeconds)}` : r.drainSeconds === 0 ? (r.delayedItems ? "every delayed item got through within the range" : "nothing waited") : `clears ${duration(r.drainSeconds)} after the range`} testid="sim-all-drain" />
      </div>
      <div className="tablewrap" style={{ marginTop: 12 }}><table data-testid="sim-all-table">
        <thead><tr><th>node</th><th className="num">arrived</th><th className="num">admitted</th><th className="num">delayed</th><th className="num">peak backlog</th><th className="num">left at the end</th><th>bound by</th></tr></thead>
        <tbody>{r.nodes.map((n) => <tr key={n.node} data-node={n.node}><td>{n.node}</td><td className="num" data-testid="arrived">{fmt(n.arrived)}</td><td className="num" data-testid="admitted">{fmt(n.admitted)}</td><td className="num" data-testid="delayed">{fmt(n.delayedItems)}</td>
          <td className="num">{fmt(n.peakBacklog)}</td><td className="num">{n.finalBacklog === 0 ? "none" : `${fmt(n.finalBacklog)}${n.drainSeconds === null ? "" : `, clears in ${duration(n.drainSeconds)}`}`}</td><td>{n.boundBy ?? "—"}</td></tr>)}</tbody>
      </table></div>
      {r.unsupported.length ? <ul className="small">{r.unsupported.map((u, i) => <li key={i}>{u.node} · {u.budget}: {u.reason}</li>)}</ul> : null}
      {r.warnings.length ? <ul className="small">{r.warnings.map((w, i) => <li key={i}>{w}</li>)}</ul> : null}
      <p className="small muted">Assumes: {r.assumes.join("; ")}.{r.hasKnownGaps ? ` Known gaps: ${fmt(r.coverage.gapSeconds)} s uncovered, ${fmt(r.coverage.lostItems)} items dropped by the recorder.` : ""}</p>
    </div>
  );
}

function SimResult({ r }: { r: Simulation }) {
  const series: Series[] = [{ name: "backlog", color: "var(--chart-2)", points: r.series.map((p) => ({ t: p.t, v: p.backlog })) }, { name: "minute peak", color: "var(--chart-1)", points: r.series.map((p) => ({ t: p.t, v: p.peak })) }];
  return (
    <div style={{ marginTop: 12 }} data-testid="sim-result">
      <div className="grid">
        <Stat label="items replayed" value={fmt(r.items)} testid="sim-items" />
        <Stat label="delayed" value={fmt(r.delayedItems)} testid="sim-delayed" hint={r.delayedPercent === null ? "no items" : `${fmt(r.delayedPercent, 1)}%`} />
        <Stat label="longest wait" value={duration(r.longestWaitSeconds)} testid="sim-longest-wait" hint="from an item's arrival to its admission" />
        <Stat label="peak backlog" value={fmt(r.peakBacklog)} testid="sim-peak" />
        <Stat label="left at the end" value={r.remainingBacklog === 0 ? "none" : fmt(r.remainingBacklog)} testid="sim-left"
          hint={r.remainingBacklog === 0 ? (r.delayedItems ? "every delayed item got through within the range" : "nothing waited") : `clears ${duration(r.drainSeconds)} after the range if nothing more arrives`} />
      </div>
      <p className="small muted">Effective: {fmt(r.effective.count)} per {fmt(r.effective.seconds, 3)} s ({r.effective.subWindows} sub-windows), cost {r.effective.costPerItem} per item.
        {r.hasKnownGaps ? ` Known gaps: ${fmt(r.coverage.gapSeconds)} s uncovered, ${fmt(r.coverage.lostItems)} items dropped by the recorder.` : ""}</p>
      {r.vendor ? <VendorCheck v={r.vendor} /> : null}
      {r.series.length ? <TimeChart label="simulated backlog" series={series} from={r.coverage.since} to={r.coverage.until} stepMs={60000} /> : null}
    </div>
  );
}

// VendorCheck is "Try a limit" against what the vendor really allowed: the seconds
// the vendor enforced less than declared, those the limit tried is above it, the
// calls the replay would have sent over it, and each limit the vendor stated.
export function VendorCheck({ v }: { v: VendorComparison }) {
  const over = v.overSeconds > 0;
  return (
    <div className={over ? "notice warn" : "notice"} style={{ marginTop: 10 }} data-testid="sim-vendor" data-over={over ? "yes" : "no"}>
      <p><strong>Against the vendor's meter</strong> ({v.budgets.join(", ")}): <span data-testid="sim-vendor-sentence">{v.sentence}</span>.</p>
      {v.seconds > 0 ? (
        <div className="grid">
          <Stat label="vendor below declared" value={`${fmt(v.seconds)} s`} testid="sim-vendor-seconds" hint={v.lowestLimit === null || v.lowestTimeMs === null ? undefined : `as low as ${fmt(v.lowestLimit)} per ${duration(v.lowestTimeMs / 1000)}`} />
          <Stat label="this limit above the vendor's" value={`${fmt(v.exceededSeconds)} s`} testid="sim-vendor-exceeded" />
          <Stat label="sent faster than the vendor allowed" value={`${fmt(v.overSeconds)} s`} testid="sim-vendor-over" hint={`${fmt(v.overItems)} calls over its limit`} />
        </div>
      ) : null}
      {v.spans.length ? <ul className="small" data-testid="sim-vendor-spans">{v.spans.map((s, i) => <li key={i}>{s.node} · {s.budget}: {s.sentence}</li>)}</ul> : null}
    </div>
  );
}

// VendorSpans lists the limits vendors stated below what is declared in the range
// (budgets that mirror the vendor's meter), each as the server says it.
export function VendorSpans({ spans }: { spans: VendorSpan[] }) {
  return (
    <section className="card" data-testid="vendor-spans"><h2>The vendor's meter</h2>
      <ul>{spans.map((s, i) => <li key={i}>Budget {s.budget} of node {s.node}: {s.sentence}</li>)}</ul>
      <p className="small muted">Recorded every second by gate-recorder from what workers report to observe.</p></section>
  );
}

/** One diagnostics finding: what is wrong, the next check, where, and since when (at is the server's time of the check). */
export function FindingCard({ app, graph, f, at }: { app: string; graph: string; f: Finding; at: number }) {
  return (
    <li className="card" style={{ marginBottom: 10 }} data-kind={f.kind}>
      <div className="row"><span className={`badge ${f.severity === "bad" ? "bad" : f.severity === "warn" ? "warn" : "info"}`}>{f.severity}</span><strong>{f.title}</strong></div>
      <p style={{ margin: "6px 0" }}>Next check: {f.action}</p>
      <div className="small muted">{f.node ? <Link to={graphHref(app, graph, "", `node=${encodeURIComponent(f.node)}`)}>node {f.node}</Link> : null}{f.path ? ` · path ${f.path}` : ""} · first seen <time dateTime={new Date(f.since).toISOString()}>{absolute(f.since)}</time> ({duration((at - f.since) / 1000)} ago)</div>
    </li>
  );
}

export function Why({ app, graph }: { app: string; graph: string }) {
  const d = useLoad(() => api.diagnostics(app, graph), [app, graph], 5000);
  if (d.loading && !d.data) return <Loading />;
  return (
    <>
      {d.error ? <ErrorState error={d.error} what="diagnostics" /> : null}
      {d.data ? (
        <>
          {d.data.issues.length === 0 ? <div className="card"><Empty title="Nothing is waiting">No backlog, backoff, cursor or worker problem on this graph right now.</Empty></div> : null}
          <ul style={{ listStyle: "none", padding: 0, margin: 0 }} data-testid="findings">
            {d.data.issues.map((f, i) => <FindingCard key={i} app={app} graph={graph} f={f} at={d.data!.at} />)}
          </ul>
          <p className="small muted">{d.data.durationScope}</p>
        </>
      ) : null}
    </>
  );
}

const ranges = [["15", "15 min"], ["60", "1 h"], ["360", "6 h"], ["1440", "24 h"]];

export function Traffic({ app, graph, view }: { app: string; graph: string; view: GraphView | null }) {
  const [minutes, setMinutes] = useQueryParam("minutes", "60");
  const [node, setNode] = useQueryParam("node", view?.nodes[0]?.node ?? "");
  const tl = useLoad(() => api.timeline(app, graph, Number(minutes)), [app, graph, minutes], 60000);
  const to = tl.data?.until ?? Date.now(), from = tl.data?.since ?? to - Number(minutes) * 60000;
  const t = tl.data;
  const samples = (t?.samples ?? []).filter((s) => s.node === node).sort((a, b) => a.t - b.t);
  const val = (f: (v: Snapshot) => number | null | undefined) => samples.map((s) => {
    const v = s.value as Snapshot;
    return { t: s.t, v: v.available === false ? null : f(v) ?? null };
  });
  const inc = t?.incoming[node];
  const incoming = (inc?.points ?? []).map((p) => ({ t: p.t, v: p.items }));
  const relayed = (t?.relayed[node] ?? []).map((r) => ({ t: r.t, v: r.total.admitted }));
  const markers = (t?.events ?? []).map((e) => ({ t: e.at, label: e.change.node ? `${e.change.label} ${e.change.node}` : `${e.change.label} v${e.change.version}` }));
  return (
    <>
      <div className="row" style={{ marginBottom: 12 }}>
        <div className="row" role="group" aria-label="time range">
          {ranges.map(([m, l]) => <button key={m} type="button" aria-pressed={minutes === m} onClick={() => setMinutes(m)} data-testid={`range-${m}`}>{l}</button>)}
        </div>
        <label className="field"><span className="name">node</span><select value={node} onChange={(e) => setNode(e.target.value)}>{(view?.nodes ?? []).map((n) => <option key={n.node}>{n.node}</option>)}</select></label>
      </div>
      {tl.error ? <ErrorState error={tl.error} what="the traffic history" /> : null}
      {tl.loading && !t ? <Loading /> : null}
      {t && !t.enabled ? <div className="notice warn">Queue sampling is off for this graph: declare <code>"counters": {"{"}"windowSeconds": 60{"}"}</code> (Watch and the wizard turn it on).</div> : null}
      {t ? (
        <div className="grid2">
          <section className="card"><h2>Relayed and incoming (items / min)</h2>
            <TimeChart label="relayed and incoming items per minute" from={from} to={to} stepMs={60000} markers={markers}
              series={[{ name: "relayed", color: "var(--chart-1)", points: relayed }, { name: "incoming (estimate)", color: "var(--chart-3)", points: incoming }]} />
            <p className="small muted">Incoming is estimated from consumer positions of a single-path ingress; unknown for shared interior queues. Retention or cursor moves distort it.{inc && !inc.attributable ? ` Unknown here: ${inc.reason}.` : ""}</p></section>
          <section className="card"><h2>Backlog (items)</h2>
            <TimeChart label="relay and worker backlog" from={from} to={to} stepMs={60000} markers={markers}
              series={[{ name: "relay backlog", color: "var(--chart-2)", points: val((v) => v.before) }, { name: "worker backlog", color: "var(--chart-4)", points: val((v) => v.workers) }]} /></section>
          <section className="card"><h2>Oldest pending (s)</h2>
            <TimeChart label="oldest pending age" from={from} to={to} stepMs={60000} markers={markers} unit=" s"
              series={[{ name: "oldest pending age", color: "var(--chart-5)", points: val((v) => v.oldestSeconds) }]} /></section>
          <section className="card"><h2>Changes</h2>
            {t.events.length === 0 ? <Empty title="No configuration change in this range" /> : <ul data-testid="changes">{t.events.map((e, i) => <li key={i}>{when(e.at)} — {e.change.label}{e.change.node ? <> on node {e.change.node}{e.change.seconds ? ` for ${e.change.seconds} s` : ""}{e.change.by ? ` by ${e.change.by}` : ""}{e.change.reason ? <>: “{e.change.reason}”</> : null}</> : null} (v{e.change.version}, {e.change.mode})</li>)}</ul>}
            <p className="small muted">Missing samples stay gaps. Annotations are context, not a revision store.</p></section>
          {t.vendor.length ? <VendorSpans spans={t.vendor} /> : null}
        </div>
      ) : null}
    </>
  );
}
