import { api, useLoad } from "../lib/api";
import { openAgent } from "../lib/agent";
import { graphHref, useQueryParam } from "../lib/router";
import { BudgetBar, Empty, ErrorState, fmt, Link, Loading, useCanWrite } from "../lib/ui";

export function Targets() {
  const rows = useLoad(api.targets, [], 5000);
  const [app, setApp] = useQueryParam("app", "");
  const [state, setState] = useQueryParam("state", "");
  const [q, setQ] = useQueryParam("q", "");
  const canWrite = useCanWrite();
  const apps = [...new Set((rows.data ?? []).map((r) => r.application))].sort();
  const shown = (rows.data ?? []).filter((r) =>
    (!app || r.application === app) && (!state || (state === "stopped" ? !r.running : r.running && r.state === state)) &&
    (!q || `${r.application}/${r.name}`.includes(q.toLowerCase())));
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
      <div className="row" role="search" style={{ marginBottom: 12 }}>
        <label className="field"><span className="name">Application</span>
          <select value={app} onChange={(e) => setApp(e.target.value)} data-testid="filter-app">
            <option value="">all</option>{apps.map((a) => <option key={a} value={a}>{a}</option>)}
          </select></label>
        <label className="field"><span className="name">State</span>
          <select value={state} onChange={(e) => setState(e.target.value)} data-testid="filter-state">
            <option value="">all</option><option value="pacing">pacing</option><option value="flowing">flowing</option><option value="stopped">no relay running</option>
          </select></label>
        <label className="field"><span className="name">Search</span><input value={q} onChange={(e) => setQ(e.target.value)} placeholder="app/name" /></label>
      </div>
      {rows.error ? <ErrorState error={rows.error} what="targets" /> : null}
      {rows.loading && !rows.data ? <Loading /> : null}
      {rows.data && rows.data.length === 0 ? <div className="card"><Empty title="No targets yet">{canWrite ? <>Start with <Link to="/targets/new">New target</Link>.</> : "An administrator can create one."}</Empty></div> : null}
      {rows.data && rows.data.length > 0 ? (
        <div className="card tablewrap">
          <table data-testid="targets-table">
            <thead><tr><th>target</th><th>state</th><th>worst budget</th><th>utilisation</th><th className="num">backlog</th><th className="num hide-sm">admitted</th><th className="num hide-sm">denied</th></tr></thead>
            <tbody>
              {shown.map((r) => {
                const util = r.worst_used !== null && r.worst_cap ? r.worst_used / r.worst_cap : null;
                return (
                  <tr key={r.application + "/" + r.name}>
                    <td><Link to={graphHref(r.application, r.graph)}>{r.application}/{r.name}</Link> <span className="muted small">v{r.version}</span></td>
                    <td>{!r.running ? <span className="badge bad">no relay running</span> : r.state === "pacing" ? <span className="badge warn">pacing</span> : <span className="badge good">flowing</span>}</td>
                    <td>{r.worst_budget_id ? <>{r.worst_budget_id}{r.worst_assumed ? <> <span className="badge warn" title="amount assumed: verify the provider's quota">assumed</span></> : null}</> : <span className="muted">none (scoped only or Watch)</span>}
                      {r.worst_cap !== null ? <div className="muted small">{fmt(r.worst_used)} of {fmt(r.worst_cap)} per {fmt(r.worst_period_seconds, 3)} s</div> : null}</td>
                    <td><BudgetBar value={util} /></td>
                    <td className="num">{fmt(r.backlog)}</td>
                    <td className="num hide-sm">{fmt(r.admitted)}</td>
                    <td className="num hide-sm">{fmt(r.denied)}</td>
                  </tr>
                );
              })}
              {shown.length === 0 ? <tr><td colSpan={7}><Empty title="Nothing matches these filters" /></td></tr> : null}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
