import { api } from "../lib/api";
import { Pager, SearchField, usePaged } from "../lib/pager";
import { graphHref, useQueryParam } from "../lib/router";

import { Empty, ErrorState, fmt, Link, Loading, Unknown, useCanWrite } from "../lib/ui";
import { AppFilter, ModeBadges, NO_RELAY } from "./targets";

export function Graphs() {
  const [app, setApp] = useQueryParam("app", "");
  const [q, setQ] = useQueryParam("q", "");
  const list = usePaged(api.graphs, { q, app }, 5000);
  const canWrite = useCanWrite();
  const [deleted] = useQueryParam("deleted", "");
  const d = list.data;
  return (
    <>
      {deleted ? <div className="notice good" role="status" data-testid="deleted-note">Deleted {deleted}. Its queues and their messages stay on the broker; the History tab of a new graph with the same name shows the deletion.</div> : null}
      <div className="spread">
        <div><h1>Graphs</h1><p className="sub">Nodes where limits apply and the paths messages take through them.</p></div>
        {canWrite ? <Link to="/graphs/new" className="button primary">New graph</Link> : null}
      </div>
      <div className="row" role="search" aria-label="graphs" style={{ marginBottom: 12 }}>
        <AppFilter value={app} onChange={setApp} />
        <SearchField value={q} onChange={setQ} label="Search" placeholder="app/name" testid="search" />
      </div>
      {list.error ? <ErrorState error={list.error} what="graphs" /> : null}
      {!d && list.loading ? <Loading /> : null}
      {d && d.total === 0 ? <div className="card"><Empty title="No graphs yet">{canWrite ? <>Create one with <Link to="/graphs/new">New graph</Link> or <Link to="/targets/new">New target</Link>.</> : "An administrator can create one."}</Empty></div> : null}
      {d && d.total > 0 ? (
        <div className="card">
          <div className="tablewrap">
            <table data-testid="graphs-table" aria-busy={list.loading}>
              <thead><tr><th>graph</th><th>nodes</th><th>paths</th><th className="num">waiting</th><th className="num">forwarded</th><th className="num hide-sm">denied</th></tr></thead>
              <tbody>{d.items.map((g) => (
                <tr key={g.application + "/" + g.name}>
                  <td><Link to={graphHref(g.application, g.name)}>{g.application}/{g.name}</Link> <span className="muted small">v{g.version}</span> {!g.running ? <span className="badge warn" title={NO_RELAY} data-testid="no-relay">queued, no relay</span> : null}<ModeBadges r={g} /></td>
                  <td>{g.nodes.map((n) => n.name).join(", ")}</td>
                  <td>{g.paths.map((p) => `${p.name} (${fmt(p.share ?? 1, 2)})`).join(", ")}</td>
                  <td className="num">{g.brokerRead ? fmt(g.nodes.reduce((s, n) => s + n.waiting_for_budget, 0)) : <Unknown />}</td>
                  <td className="num">{fmt(g.forwarded)}</td>
                  <td className="num hide-sm">{fmt(g.nodes.reduce((s, n) => s + n.denied, 0))}</td>
                </tr>
              ))}
              {d.matched === 0 ? <tr><td colSpan={6}><Empty title="Nothing matches these filters">Change the search or the application; the server searched all {fmt(d.total)} graphs.</Empty></td></tr> : null}
              </tbody>
            </table>
          </div>
          <Pager list={list} noun={["graph", "graphs"]} testid="graphs-pager" />
        </div>
      ) : null}
    </>
  );
}
