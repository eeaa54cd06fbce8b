import { useEffect, useState } from "react";
import { api, useLoad } from "./lib/api";
import { match, useLocation } from "./lib/router";
import { ErrorState, Link, MeContext } from "./lib/ui";
import { Overview } from "./pages/overview";
import { Targets } from "./pages/targets";
import { NewTarget } from "./pages/wizard";
import { Graphs } from "./pages/graphs";
import { GraphPages } from "./pages/graph";
import { EditPage } from "./pages/edit";
import { AgentPanel } from "./pages/agent";
import { clearAgent, openAgent, useAgent } from "./lib/agent";

type Theme = "light" | "dark";
function initialTheme(): Theme {
  const saved = localStorage.getItem("gate-theme");
  if (saved === "light" || saved === "dark") return saved;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function App() {
  const [theme, setTheme] = useState<Theme>(initialTheme);
  useEffect(() => { document.documentElement.dataset.theme = theme; localStorage.setItem("gate-theme", theme); }, [theme]);
  const me = useLoad(api.me, []);
  const { path, search } = useLocation();
  const agent = useAgent();
  const route = match(path);
  // A graph's pages name the graph and the tab themselves (pages/graph.tsx).
  useEffect(() => { if (route.page !== "graph") document.title = `Gate · ${titleOf(route.page)}`; }, [route.page]);

  const section = route.page === "targets" || route.page === "new-target" ? "targets" : route.page === "overview" ? "overview" : "graphs";
  let body;
  // The page renders while /api/me is in flight: write controls appear
  // only once the identity says admin, so nothing is offered too early.
  if (me.error && !me.data && me.error.status === 401) body = <ErrorState error={me.error} what="your session" />;
  else if (route.page === "overview") body = <Overview />;
  else if (route.page === "targets") body = <Targets />;
  else if (route.page === "new-target") body = <NewTarget />;
  else if (route.page === "graphs") body = <Graphs />;
  else if (route.page === "new-graph") body = <EditPage key={new URLSearchParams(search).get("d") ?? ""} app={null} graph={null} />;
  else if (route.page === "graph") body = <GraphPages app={route.app} graph={route.graph} sub={route.sub} />;
  else body = <div className="empty"><strong>No such page</strong><Link to="/">Back to the overview</Link></div>;

  return (
    <MeContext.Provider value={me.data}>
      <a className="skip" href="#main">Skip to content</a>
      {me.data?.dev_bypass || me.data?.actor === "dev" ? (
        <div className="banner" role="note" data-testid="dev-banner">Sign-in is bypassed: every request is {me.data.email} (GATE_DEV_EMAIL). Never expose this console.</div>
      ) : null}
      <header className="nav">
        <Link to="/" className="brand"><img src="/favicon.svg" alt="" width={20} height={20} />Gate</Link>
        <nav aria-label="main">
          <Link to="/" aria-current={section === "overview" ? "page" : undefined}>Overview</Link>
          <Link to="/targets" aria-current={section === "targets" ? "page" : undefined}>Targets</Link>
          <Link to="/graphs" aria-current={section === "graphs" ? "page" : undefined}>Graphs</Link>
        </nav>
        <div className="who">
          {me.data ? <><span className="email">{me.data.email ?? me.data.actor}</span><span className={`badge ${me.data.role === "admin" ? "info" : ""}`} data-testid="role">{me.data.role}</span></> : null}
          <button type="button" onClick={() => openAgent()} aria-expanded={agent.open} data-testid="nav-agent">AI agent</button>
          <button type="button" onClick={() => setTheme(theme === "dark" ? "light" : "dark")} aria-label={`switch to ${theme === "dark" ? "light" : "dark"} theme`} data-testid="theme">
            {theme === "dark" ? "☀" : "☾"}
          </button>
          {me.data && (me.data.actor === "google" || me.data.actor === "oidc") ? <form method="post" action="/api/auth/logout" onSubmit={() => clearAgent()}><button type="submit">Sign out</button></form> : null}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {me.error && !me.data && me.error.status !== 401 ? <ErrorState error={me.error} what="your session" /> : null}
        {body}
      </main>
      {agent.open ? <AgentPanel /> : null}
    </MeContext.Provider>
  );
}

function titleOf(page: string) {
  return ({ overview: "Overview", targets: "Targets", "new-target": "New target", graphs: "Graphs", "new-graph": "New graph", graph: "Graph" } as Record<string, string>)[page] ?? "Not found";
}
