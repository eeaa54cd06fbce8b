import { api, useLoad } from "../lib/api";
import { openAgent } from "../lib/agent";
import { Pager, SearchField, usePaged } from "../lib/pager";
import { graphHref, useQueryParam } from "../lib/router";
import { ago, BudgetBar, Empty, ErrorState, fmt, Link, Loading, Unknown, useCanWrite, when } from "../lib/ui";

/** The words the console, the push door and the diagnostics use for a graph no relay runs. */
export const NO_RELAY = "queued; no relay runs this graph right now: items wait in the ingress queue";

/** What a graph is doing besides its numbers: Watch, ready for review, a backoff holding, unknown while the broker is down. */
export function ModeBadges({ r }: { r: { mode: string; readyForReview: boolean; watchEndsAt: number | null; held: string[]; brokerRead: boolean } }) {
  return (
    <>
      {r.mode === "watch" ? (r.readyForReview
        ? <> <span className="badge info" data-testid="ready-badge" title="the Watch period is over: review the summary and configure limits">ready for review</span></>
        : <> <span className="badge info" data-testid="watch-badge" title={r.watchEndsAt ? `Watch until ${when(r.watchEndsAt)}` : "Watch"}>Watch{r.watchEndsAt ? ` · ends ${ago(r.watchEndsAt)}` : ""}</span></>) : null}
      {r.held.length ? <> <span className="badge bad" data-testid="held-badge" title="a backoff holds every path through these nodes">backoff: {r.held.join(", ")}</span></> : null}
      {!r.brokerRead ? <> <span className="badge" data-testid="unknown-badge" title="the broker did not answer: live state unknown">live state unknown</span></> : null}
    </>
  );
}

/** The applications a filter offers: the first page of /api/apps (the server's largest). */
export function useAppChoices() {
  return useLoad(() => api.apps({ limit: 200 }), [], 30000);
}

export function AppFilter({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const apps = useAppChoices();
  const names = (apps.data?.items ?? []).map((a) => a.application);
  if (value && !names.includes(value)) names.push(value);
  return (
    <label className="field"><span className="name">Application</span>
      <select value={value} onChange={(e) => onChange(e.target.value)} data-testid="filter-app">
        <option value="">all{apps.data?.next ? ` (first ${fmt(apps.data.items.length)}; search app/ for others)` : ""}</option>
        {names.sort().map((a) => <option key={a} value={a}>{a}</option>)}
      </select></label>
  );
}

export function Targets() {
  const [app, setApp] = useQueryParam("app", "");
  const [state, setState] = useQueryParam("state", "");
  const [q, setQ] = useQueryParam("q", "");
  const list = usePaged(api.targets, { q, app, state }, 5000);
  const canWrite = useCanWrite();
  const d = list.data;
  return (
    <>
      <div className="spread">
        <div><h1>Targets</h1><p className="sub">Every graph with its worst budget: pacing means items waited for a window, flowing means nothing did.</p></div>
        {canWrite ? (
          <div className="row">
            <button type="button" onClick={() => openAgent(app || undefined)} data-testid="create-with-ai">Create with AI</button>
            <Link to="/targets/new" className="button primary">New target</Link>
          </div>
        ) : null}
      </div>
      <div className="row" role="search" aria-label="targets" style={{ marginBottom: 12 }}>
        <AppFilter value={app} onChange={setApp} />
        <label className="field"><span className="name">State</span>
          <select value={state} onChange={(e) => setState(e.target.value)} data-testid="filter-state">
            <option value="">all</option><option value="pacing">pacing</option><option value="flowing">flowing</option><option value="stopped">queued, no relay running</option><option value="watch">in Watch</option><option value="ready">ready for review</option><option value="held">held by a backoff</option>
          </select></label>
        <SearchField value={q} onChange={setQ} label="Search" placeholder="app/name" testid="search" />
      </div>
      {list.error ? <ErrorState error={list.error} what="targets" /> : null}
      {!d && list.loading ? <Loading /> : null}
      {d && d.total === 0 ? <div className="card"><Empty title="No targets yet">{canWrite ? <>Start with <Link to="/targets/new">New target</Link>.</> : "An administrator can create one."}</Empty></div> : null}
      {d && d.total > 0 ? (
        <div className="card">
          <div className="tablewrap">
            <table data-testid="targets-table" aria-busy={list.loading}>
              <thead><tr><th>target</th><th>state</th><th>worst budget</th><th>utilisation</th><th className="num">backlog</th><th className="num hide-sm">admitted</th><th className="num hide-sm">denied</th></tr></thead>
              <tbody>
                {d.items.map((r) => {
                  const util = r.worst_used !== null && r.worst_cap ? r.worst_used / r.worst_cap : null;
                  return (
                    <tr key={r.application + "/" + r.name}>
                      <td><Link to={graphHref(r.application, r.graph)}>{r.application}/{r.name}</Link> <span className="muted small">v{r.version}</span></td>
                      <td>{!r.running ? <><span className="badge warn" data-testid="no-relay">queued, no relay</span><div className="muted small hide-sm">{NO_RELAY}</div></> : r.state === "pacing" ? <span className="badge warn">pacing</span> : <span className="badge good">flowing</span>}<ModeBadges r={r} /></td>
                      <td>{r.worst_budget_id ? <>{r.worst_budget_id}{r.worst_assumed ? <> <span className="badge warn" title="amount assumed: verify the provider's quota">assumed</span></> : null}</> : !r.brokerRead ? <Unknown /> : <span className="muted">{r.mode === "watch" ? "none: Watch enforces no budget" : "none: only per-key budgets"}</span>}
                        {r.worst_cap !== null ? <div className="muted small">{fmt(r.worst_used)} of {fmt(r.worst_cap)} per {fmt(r.worst_period_seconds, 3)} s</div> : null}</td>
                      <td>{r.brokerRead ? <BudgetBar value={util} /> : <Unknown />}</td>
                      <td className="num">{r.brokerRead ? fmt(r.backlog) : <Unknown />}</td>
                      <td className="num hide-sm">{fmt(r.admitted)}</td>
                      <td className="num hide-sm">{fmt(r.denied)}</td>
                    </tr>
                  );
                })}
                {d.matched === 0 ? <tr><td colSpan={7}><Empty title="Nothing matches these filters">Change the search or the filters; the server searched all {fmt(d.total)} targets.</Empty></td></tr> : null}
              </tbody>
            </table>
          </div>
          <Pager list={list} noun={["target", "targets"]} testid="targets-pager" />
        </div>
      ) : null}
    </>
  );
}
