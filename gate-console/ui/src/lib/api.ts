// The console's fetch layer: every request goes to the same origin, every
// shape comes from wire.gen.ts, every failure becomes an ApiError carrying
// the status and the server's own message.
import { useCallback, useEffect, useRef, useState } from "react";
import type * as W from "../wire";
import { listQueryString, type ListQuery } from "./paging";

export class ApiError extends Error {
  constructor(public status: number, message: string, public body: W.ErrorBody | null) {
    super(message);
  }
  /** The route is not there on this server (another build adds it): its code says so, or, from a build before codes, its words. */
  get missing() { return this.status === 404 && (!this.body || this.body.code === "route-not-found" || /^no route /.test(this.message)); }
}

/** The preconditions of a write (RFC 9110): create means create, an edit writes over exactly what it read. */
export type Pre = { ifNoneMatch: "*" } | { ifMatch: string } | null;

function preHeaders(pre: Pre | undefined): Record<string, string> {
  if (!pre) return {};
  return "ifNoneMatch" in pre ? { "If-None-Match": "*" } : { "If-Match": pre.ifMatch };
}

async function request<T>(method: string, url: string, body?: unknown, pre?: Pre): Promise<T> {
  return (await requestTagged<T>(method, url, body, pre)).data;
}

/** A request whose answer's ETag header matters (a graph read before an edit). */
async function requestTagged<T>(method: string, url: string, body?: unknown, pre?: Pre): Promise<{ data: T; etag: string | null }> {
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { ...(body === undefined ? { Accept: "application/json" } : { Accept: "application/json", "Content-Type": "application/json" }), ...preHeaders(pre) },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (e) {
    throw new ApiError(0, `the console server did not answer (${(e as Error).message})`, null);
  }
  const text = await res.text();
  let parsed: unknown;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (!res.ok) {
    const eb = parsed && typeof parsed === "object" && "error" in (parsed as object) ? (parsed as W.ErrorBody) : null;
    throw new ApiError(res.status, eb?.error ?? (text.trim() || res.statusText), eb);
  }
  return { data: parsed as T, etag: res.headers.get("ETag") };
}

const seg = encodeURIComponent;
const g = (app: string, graph: string) => `/api/apps/${seg(app)}/graphs/${seg(graph)}`;
const v1 = (app: string, graph: string) => `/v1/apps/${seg(app)}/graphs/${seg(graph)}`;

export const api = {
  me: () => request<W.Me>("GET", "/api/me"),
  version: () => request<W.Version>("GET", "/api/version"),
  overview: () => request<W.Overview>("GET", "/api/overview"),
  // The lists page on the server (lib/paging): limit, cursor, q, app, state.
  apps: (q: ListQuery = {}) => request<W.AppPage>("GET", "/api/apps" + listQueryString(q)),
  targets: (q: ListQuery = {}) => request<W.TargetPage>("GET", "/api/targets" + listQueryString(q)),
  graphs: (q: ListQuery = {}) => request<W.GraphPage>("GET", "/api/graphs" + listQueryString(q)),
  // The graph view (§3.3) is the same on /v1 and /api; /v1 is served by every build.
  graph: (app: string, graph: string) => request<W.GraphView>("GET", v1(app, graph)),
  traces: (limit = 50) => request<W.Trace[]>("GET", `/api/traces?limit=${limit}`),
  breaches: (limit = 10) => request<W.BreachRow[]>("GET", `/api/breaches/recent?limit=${limit}`),
  flow: (minutes = 120) => request<W.Flow>("GET", `/api/flow?minutes=${minutes}`),
  watch: (app: string, graph: string) => request<W.WatchSummary>("GET", `${g(app, graph)}/watch`),
  diagnostics: (app: string, graph: string) => request<W.Diagnostics>("GET", `${g(app, graph)}/diagnostics`),
  timeline: (app: string, graph: string, minutes: number) => request<W.Timeline>("GET", `${g(app, graph)}/timeline?minutes=${minutes}`),
  simulate: (app: string, graph: string, q: { node: string; count: number; timeMs: number; subWindows?: number; minutes: number }) => {
    const p = new URLSearchParams({ node: q.node, count: String(q.count), timeMs: String(q.timeMs), minutes: String(q.minutes) });
    if (q.subWindows) p.set("subWindows", String(q.subWindows));
    return request<W.Simulation>("GET", `${g(app, graph)}/simulate?${p}`);
  },
  explain: (app: string, graph: string, node: string, q: { scope?: string; op?: string; path?: string; partition?: string; transactionId?: string }) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") p.set(k, v);
    return request<W.Explanation>("GET", `${g(app, graph)}/nodes/${seg(node)}/explain?${p}`);
  },
  /** One page of a scoped budget's limits per key (runtime, in value order; the document's on the first page). */
  keyLimits: (app: string, graph: string, node: string, budget: string, after = "", limit = 20) =>
    request<W.KeyLimits>("GET", `${g(app, graph)}/nodes/${seg(node)}/budgets/${seg(budget)}/keys?limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ""}`),
  simulateGraph: (app: string, graph: string, doc: unknown, minutes: number) => request<W.GraphSimulation>("POST", `${g(app, graph)}/simulate?minutes=${minutes}`, doc),
  /** The graph view with the stored document's ETag (what an edit sends as If-Match). */
  graphTagged: async (app: string, graph: string) => {
    const r = await requestTagged<W.GraphView>("GET", v1(app, graph));
    return { view: r.data, etag: r.etag };
  },
  /** PUT …?dryRun=true: every check a PUT runs and the diff against what is stored; nothing is stored. */
  dryRun: (app: string, graph: string, doc: unknown, pre: Pre) => request<W.DryRun>("PUT", `${v1(app, graph)}?dryRun=true`, doc, pre),
  declare: (app: string, graph: string, doc: unknown, pre: Pre) => request<W.DeclareResponse>("PUT", v1(app, graph), doc, pre),
  remove: (app: string, graph: string, etag: string | null) => request<W.Deleted>("DELETE", v1(app, graph), undefined, etag ? { ifMatch: etag } : null),
  versions: (app: string, graph: string, cursor = "") => request<W.GraphVersionPage>("GET", `${g(app, graph)}/versions?limit=50${cursor ? `&cursor=${seg(cursor)}` : ""}`),
  revision: (app: string, graph: string, revision: number) => request<W.GraphRevision>("GET", `${g(app, graph)}/versions/${revision}`),
  restoreDryRun: (app: string, graph: string, revision: number, pre: Pre) => request<W.DryRun>("POST", `${v1(app, graph)}/versions/${revision}/restore?dryRun=true`, undefined, pre),
  restore: (app: string, graph: string, revision: number, pre: Pre) => request<W.DeclareResponse>("POST", `${v1(app, graph)}/versions/${revision}/restore`, undefined, pre),
  backoff: (app: string, graph: string, node: string, retryAfterSeconds: number, by: string, reason: string) =>
    request<W.BackoffResponse>("POST", `${v1(app, graph)}/nodes/${seg(node)}/backoff`, reason ? { retryAfterSeconds, by, reason } : { retryAfterSeconds, by }),
  lift: (app: string, graph: string, node: string, reason: string) =>
    request<{ ok: boolean; cleared: string[] }>("DELETE", `${v1(app, graph)}/nodes/${seg(node)}/backoff`, reason ? { reason } : undefined),
  /** Shadow limits (issue 27): the candidate and its per-minute results; `set: false` when none is set. */
  shadow: (app: string, graph: string, minutes = 60) => request<W.Shadow>("GET", `${g(app, graph)}/shadow?minutes=${minutes}`),
  setShadow: (app: string, graph: string, candidate: unknown) => request<W.Shadow>("PUT", `${g(app, graph)}/shadow`, candidate),
  dropShadow: (app: string, graph: string) => request<W.ShadowDeleted>("DELETE", `${g(app, graph)}/shadow`),
  aiStatus: () => request<W.AIStatus>("GET", "/api/ai/status"),
  aiChat: (body: W.AIChatRequest) => request<W.AIChatReply>("POST", "/api/ai/chat", body),
  push: (app: string, graph: string, node: string, payload: object) => request<{ ok: boolean; pushed: number }>("POST", `${v1(app, graph)}/nodes/${seg(node)}/push`, { payload }),
};

export interface Loaded<T> { data: T | null; error: ApiError | null; loading: boolean; reload: () => void }

/** Load once (and again every pollMs when given); keeps the last good data while a reload runs. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: ApiError | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  useEffect(() => {
    let live = true;
    let timer: number | undefined;
    const run = () => {
      fnRef.current().then(
        (data) => { if (live) setState({ data, error: null, loading: false }); },
        (e: unknown) => {
          if (!live) return;
          const err = e instanceof ApiError ? e : new ApiError(0, String(e), null);
          setState((s) => ({ data: s.data, error: err, loading: false }));
        },
      ).finally(() => { if (live && pollMs) timer = window.setTimeout(run, pollMs); });
    };
    run();
    return () => { live = false; if (timer) window.clearTimeout(timer); };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick, pollMs]);
  return { ...state, reload };
}
