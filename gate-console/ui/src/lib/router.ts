// A small history router: the path picks the page, the query string holds
// the filters, the selected node and the time range so every view is a link.
import { useCallback, useEffect, useRef, useState } from "react";

const listeners = new Set<() => void>();
function emit() { listeners.forEach((l) => l()); }
window.addEventListener("popstate", emit);

// Unsaved work: a page that holds some registers a guard; leaving through a
// link asks first, and closing or reloading the tab gets the browser's prompt.
let leaveGuard: (() => string | null) | null = null;
export function setLeaveGuard(g: (() => string | null) | null) { leaveGuard = g; }
window.addEventListener("beforeunload", (e) => { if (leaveGuard?.()) { e.preventDefault(); e.returnValue = ""; } });

/** Guard this page's unsaved work: why is the question asked before leaving, null when nothing is unsaved. */
export function useLeaveGuard(why: string | null) {
  const ref = useRef(why);
  useEffect(() => { ref.current = why; });
  useEffect(() => {
    const g = () => ref.current;
    leaveGuard = g;
    return () => { if (leaveGuard === g) leaveGuard = null; };
  }, []);
}

/** Whether leaving may go ahead (asks when the page holds unsaved work). */
export function mayLeave(): boolean {
  const why = leaveGuard?.();
  return !why || window.confirm(why);
}

export function navigate(to: string, replace = false, force = false) {
  if (!force && !mayLeave()) return;
  if (!force) leaveGuard = null;
  if (replace) history.replaceState(null, "", to); else history.pushState(null, "", to);
  window.scrollTo(0, 0);
  emit();
}

export function useLocation() {
  const [loc, setLoc] = useState(() => ({ path: location.pathname, search: location.search }));
  useEffect(() => {
    const l = () => setLoc({ path: location.pathname, search: location.search });
    listeners.add(l);
    return () => { listeners.delete(l); };
  }, []);
  return loc;
}

/** One query-string parameter as state; writing it replaces the history entry. */
export function useQueryParam(key: string, fallback: string): [string, (v: string) => void] {
  const { search } = useLocation();
  const value = new URLSearchParams(search).get(key) ?? fallback;
  const set = useCallback((v: string) => {
    const p = new URLSearchParams(location.search);
    if (v === fallback || v === "") p.delete(key); else p.set(key, v);
    const qs = p.toString();
    history.replaceState(null, "", location.pathname + (qs ? "?" + qs : ""));
    emit();
  }, [key, fallback]);
  return [value, set];
}

export type Route =
  | { page: "overview" }
  | { page: "targets" }
  | { page: "new-target" }
  | { page: "graphs" }
  | { page: "new-graph" }
  | { page: "graph"; app: string; graph: string; sub: "" | "edit" | "clone" | "guide" | "watch" | "why" | "traffic" | "history" }
  | { page: "not-found" };

export function match(path: string): Route {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: "overview" };
  if (parts[0] === "targets" && parts.length === 1) return { page: "targets" };
  if (parts[0] === "targets" && parts[1] === "new" && parts.length === 2) return { page: "new-target" };
  if (parts[0] === "graphs" && parts.length === 1) return { page: "graphs" };
  if (parts[0] === "graphs" && parts[1] === "new" && parts.length === 2) return { page: "new-graph" };
  if (parts[0] === "graphs" && (parts.length === 3 || parts.length === 4)) {
    const sub = (parts[3] ?? "") as "";
    if (["", "edit", "clone", "guide", "watch", "why", "traffic", "history"].includes(sub)) return { page: "graph", app: parts[1], graph: parts[2], sub };
  }
  return { page: "not-found" };
}

export const graphHref = (app: string, graph: string, sub = "", qs = "") =>
  `/graphs/${encodeURIComponent(app)}/${encodeURIComponent(graph)}${sub ? "/" + sub : ""}${qs ? "?" + qs : ""}`;
