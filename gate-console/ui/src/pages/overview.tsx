import { api, useLoad } from "../lib/api";
import type { Overview as OverviewFigures } from "../wire";
import { TimeChart, type Series } from "../lib/chart";
import { Pager, SearchField, usePaged } from "../lib/pager";
import { graphHref, useQueryParam } from "../lib/router";
import { Empty, ErrorState, fmt, Link, Loading, plural, Stat, Unknown, when } from "../lib/ui";
import { ModeBadges, NO_RELAY } from "./targets";

const colors = ["var(--chart-1)", "var(--chart-2)", "var(--chart-3)", "var(--chart-4)", "var(--chart-5)"];

export function Overview() {
  const ov = useLoad(api.overview, [], 5000);
  const ver = useLoad(api.version, [], 15000);
  const flow = useLoad(() => api.flow(120), [], 30000);
  const breaches = useLoad(() => api.breaches(10), [], 5000);
  if (ov.loading && !ov.data) return <Loading />;
  if (!ov.data) return <ErrorState error={ov.error!} what="the overview" />;
  const o = ov.data;
  const now = Date.now();
  const series: Series[] = (flow.data?.applications ?? []).map((a, i) => ({
    name: a.application, color: colors[i % colors.length],
    // One point per target and minute; total_admitted is the application's, so one per minute.
    points: [...new Map(a.points.map((p) => [p.t, { t: p.t, v: p.total_admitted }])).values()].sort((x, y) => x.t - y.t),
  }));
  return (
    <>
      <div className="spread">
        <div><h1>Overview</h1><p className="sub">The whole fleet: the broker, every graph, what was admitted and what waited.</p></div>
        <div className="row"><Link to="/targets/new" className="button primary">New target</Link><Link to="/graphs/new" className="button">New graph</Link></div>
      </div>
      {ov.error ? <ErrorState error={ov.error} what="the overview (showing the last answer)" /> : null}
      {!o.queen.reachable ? (
        <div className="notice bad" role="alert" data-testid="broker-down"><strong>The broker is not reachable</strong> at {o.queen.url}. Nothing is relayed until it answers; pushes fail with 502.</div>
      ) : null}
      <div className="grid">
        <Stat testid="stat-broker" label="Broker" value={o.queen.reachable ? <span className="badge good">reachable</span> : <span className="badge bad">down</span>}
          hint={`${o.queen.url}${o.queen.version ? ` · Queen ${o.queen.version}` : ""}`} />
        <Stat testid="stat-gate" label="Gate" value={ver.data?.gate ?? "—"} hint="console build" />
        <Stat testid="stat-graphs" label="Graphs" value={fmt(o.graphs)} hint={plural(o.targets, "target")} />
        <Stat testid="stat-admitted" label="Admitted" value={fmt(o.admitted_total)} hint={o.admitted_per_sec === null ? <span data-testid="rate-reason">rate unknown: {o.admitted_per_sec_reason ?? "the server gave no reason"}</span> : <span data-testid="rate">{fmt(o.admitted_per_sec, 1)}/s now</span>} />
        <Stat testid="stat-denied" label="Denied (waited)" value={fmt(o.denied_total)} hint="windows cut short plus claims released" />
        <Stat testid="stat-budgets" label="Budgets to verify" value={fmt(o.budgets_assumed)} hint={`assumed · ${fmt(o.budgets_stale)} stale (older than 90 days)`} />
        <ModeCounts o={o} />
      </div>
      <p className="muted small" data-testid="figures-age">Fleet figures as of {new Date(o.figures_at).toLocaleTimeString("en-GB", { hour12: false })}: computed on the server at most every {fmt(o.figures_max_age_ms / 1000)} s and shared by every viewer; the counters are the relays' last published status.</p>
      <div className="grid2" style={{ marginTop: 14 }}>
        <section className="card" aria-labelledby="flow-h">
          <h2 id="flow-h">Fleet flow, last 2 hours</h2>
          {flow.error ? <ErrorState error={flow.error} what="the fleet flow" /> : null}
          {flow.data && !flow.data.durable ? (
            <Empty title="No history">Admitted-per-minute needs PostgreSQL history (PG_HOST) and graphs with <code>counters</code> on. Limits hold without it.</Empty>
          ) : flow.data ? (
            <TimeChart label="admitted per minute by application" unit="/min" series={series} from={now - 120 * 60000} to={now} stepMs={60000} />
          ) : flow.error ? null : <Loading />}
        </section>
        <section className="card" aria-labelledby="br-h">
          <h2 id="br-h">Active backoffs</h2>
          {breaches.error ? <ErrorState error={breaches.error} what="backoffs" /> : null}
          {breaches.data && breaches.data.length === 0 ? <Empty title="No backoff is holding">A vendor's Retry-After reported to the backoff route shows here until it expires.</Empty> : null}
          {breaches.data && breaches.data.length > 0 ? (
            <div className="tablewrap"><table>
              <thead><tr><th>graph · node</th><th>until</th><th>by</th></tr></thead>
              <tbody>{breaches.data.map((b) => (
                <tr key={b.application + b.graph + b.node}><td><Link to={graphHref(b.application, b.graph, "", `node=${encodeURIComponent(b.node)}`)}>{b.application}/{b.graph} · {b.node}</Link></td><td>{when(b.until)}</td><td>{b.by ?? "—"}</td></tr>
              ))}</tbody>
            </table></div>
          ) : null}
        </section>
      </div>
      {o.graphs === 0 ? <div className="card" style={{ marginTop: 14 }}><Empty title="No graphs yet">Create a target to start pacing traffic. <Link to="/targets/new">New target</Link></Empty></div> : <FindGraph />}
    </>
  );
}

/** How many graphs are in Watch, ready for review, and held by a backoff, each linking to the Targets list filtered to them. */
export function ModeCounts({ o }: { o: Pick<OverviewFigures, "watching" | "ready_for_review" | "held"> }) {
  const count = (n: number | null | undefined, state: string, noun: string) =>
    n === null || n === undefined ? <Unknown /> : <Link to={`/targets?state=${state}`} aria-label={`${plural(n, "graph")} ${noun}: list them`}>{fmt(n)}</Link>;
  return (
    <>
      <Stat testid="stat-watch" label="In Watch" value={count(o.watching, "watch", "in Watch")} hint="observed, no limit enforced yet" />
      <Stat testid="stat-ready" label="Ready for review" value={count(o.ready_for_review, "ready", "ready for review")} hint="Watch period over: review and configure limits" />
      <Stat testid="stat-held" label="Held by a backoff" value={count(o.held, "held", "held by a backoff")} hint={o.held === null || o.held === undefined ? "the broker's backoffs could not be read" : "a vendor's Retry-After holds their paths"} />
    </>
  );
}

/** Find a graph among all of them: the server searches and pages (10 a page). */
function FindGraph() {
  const [q, setQ] = useQueryParam("q", "");
  const list = usePaged(api.targets, { q }, 10000, 10);
  const d = list.data;
  return (
    <section className="card" aria-labelledby="find-h" style={{ marginTop: 14 }}>
      <div className="spread" style={{ marginBottom: 8 }}>
        <h2 id="find-h">Find a graph</h2>
        <div role="search" aria-label="find a graph"><SearchField value={q} onChange={setQ} label="Search" placeholder="app/name" testid="find-graph" /></div>
      </div>
      {list.error ? <ErrorState error={list.error} what="the graphs" /> : null}
      {!d && list.loading ? <Loading /> : null}
      {d ? (
        <>
          {d.matched === 0 ? <Empty title="No graph matches">The server searched all {fmt(d.total)} graphs by application and name.</Empty> : (
            <div className="tablewrap"><table data-testid="find-table" aria-busy={list.loading}>
              <thead><tr><th>graph</th><th>state</th><th className="num">backlog</th></tr></thead>
              <tbody>{d.items.map((r) => (
                <tr key={r.application + "/" + r.name}>
                  <td><Link to={graphHref(r.application, r.graph)}>{r.application}/{r.name}</Link></td>
                  <td>{!r.running ? <span className="badge warn" title={NO_RELAY}>queued, no relay</span> : r.state === "pacing" ? <span className="badge warn">pacing</span> : <span className="badge good">flowing</span>}<ModeBadges r={r} /></td>
                  <td className="num">{r.brokerRead ? fmt(r.backlog) : <Unknown />}</td>
                </tr>
              ))}</tbody>
            </table></div>
          )}
          <Pager list={list} limit={10} noun={["graph", "graphs"]} testid="find-pager" />
        </>
      ) : null}
    </section>
  );
}
