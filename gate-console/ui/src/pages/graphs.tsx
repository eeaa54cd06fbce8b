import { api, useLoad } from "../lib/api";
import { graphHref, useQueryParam } from "../lib/router";
import { Empty, ErrorState, fmt, Link, Loading, useCanWrite } from "../lib/ui";

export function Graphs() {
  const rows = useLoad(api.graphs, [], 5000);
  const [app, setApp] = useQueryParam("app", "");
  const canWrite = useCanWrite();
  const apps = [...new Set((rows.data ?? []).map((r) => r.application))].sort();
  const shown = (rows.data ?? []).filter((r) => !app || r.application === app);
  return (
    <>
      <div className="spread">
        <div><h1>Graphs</h1><p className="sub">Nodes where limits apply and the paths messages take through them.</p></div>
        {canWrite ? <Link to="/graphs/new" className="button primary">New graph</Link> : null}
      </div>
      <div className="row" role="search" style={{ marginBottom: 12 }}>
        <label className="field"><span className="name">Application</span>
          <select value={app} onChange={(e) => setApp(e.target.value)} data-testid="filter-app">
            <option value="">all</option>{apps.map((a) => <option key={a} value={a}>{a}</option>)}
          </select></label>
      </div>
      {rows.error ? <ErrorState error={rows.error} what="graphs" /> : null}
      {rows.loading && !rows.data ? <Loading /> : null}
      {rows.data && rows.data.length === 0 ? <div className="card"><Empty title="No graphs yet">{canWrite ? <>Create one with <Link to="/graphs/new">New graph</Link> or <Link to="/targets/new">New target</Link>.</> : "An administrator can create one."}</Empty></div> : null}
      {shown.length > 0 ? (
        <div className="card tablewrap">
          <table data-testid="graphs-table">
            <thead><tr><th>graph</th><th>nodes</th><th>paths</th><th className="num">waiting</th><th className="num">forwarded</th><th className="num hide-sm">denied</th></tr></thead>
            <tbody>{shown.map((g) => {
              const running = g.nodes.every((n) => n.running);
              return (
                <tr key={g.application + "/" + g.name}>
                  <td><Link to={graphHref(g.application, g.name)}>{g.application}/{g.name}</Link> <span className="muted small">v{g.version}</span> {!running ? <span className="badge bad">no relay running</span> : null}</td>
                  <td>{g.nodes.map((n) => n.name).join(", ")}</td>
                  <td>{g.paths.map((p) => `${p.name} (${fmt(p.share ?? 1, 2)})`).join(", ")}</td>
                  <td className="num">{fmt(g.nodes.reduce((s, n) => s + n.waiting_for_budget, 0))}</td>
                  <td className="num">{fmt(g.forwarded)}</td>
                  <td className="num hide-sm">{fmt(g.nodes.reduce((s, n) => s + n.denied, 0))}</td>
                </tr>
              );
            })}</tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
