// Server-side paging of the console's lists (/api/apps, /api/targets,
// /api/graphs): the query a page is asked with, the trail of cursors that
// makes "Previous" work with a server that only hands out "next", and the
// words that say which rows are shown. Pure functions: no React, no fetch.
import type { TargetPage } from "../wire";

/** What one list request asks the server for (every field optional). */
export interface ListQuery {
  limit?: number;
  cursor?: string;
  q?: string;
  app?: string;
  state?: string;
}

/** Any of the list pages (wire.AppPage, TargetPage, GraphPage), by its rows' type. */
export type Page<T> = Omit<TargetPage, "items"> & { items: T[] };

/** The query string of a list request: empty values are left out. */
export function listQueryString(q: ListQuery): string {
  const p = new URLSearchParams();
  if (q.limit !== undefined) p.set("limit", String(q.limit));
  if (q.cursor) p.set("cursor", q.cursor);
  const search = q.q?.trim();
  if (search) p.set("q", search);
  if (q.app) p.set("app", q.app);
  if (q.state) p.set("state", q.state);
  const s = p.toString();
  return s ? `?${s}` : "";
}

/**
 * The cursors of the pages walked so far: trail[0] is "" (the first page),
 * the last one is the page shown. The server answers "next" only, so going
 * back pops the trail.
 */
export type Trail = readonly string[];

export const firstPage: Trail = [""];

/** The trail after "Next": unchanged when there is no next page. */
export function forward(trail: Trail, next: string | null | undefined): Trail {
  return next ? [...trail, next] : trail;
}

/** The trail after "Previous": unchanged on the first page. */
export function back(trail: Trail): Trail {
  return trail.length > 1 ? trail.slice(0, -1) : trail;
}

/** The cursor of the page the trail shows ("" for the first). */
export const current = (trail: Trail) => trail[trail.length - 1] ?? "";

const n = (v: number) => v.toLocaleString("en-US");

/**
 * Which rows a page shows, for the pager's status line: "21–40 of 1,234
 * matching · 10,000 targets", "1–7 of 7 targets", "No target matches".
 */
export function rangeText(trail: Trail, limit: number, shown: number, matched: number, total: number, noun: [string, string]): string {
  const [one, many] = noun;
  const all = `${n(total)} ${total === 1 ? one : many}`;
  if (matched === 0) return total === 0 ? `No ${many} yet` : `No ${one} matches · ${all}`;
  // Rows declared or deleted while paging can make a page start elsewhere
  // than limit × index; the figures are the server's, the range a guide.
  const from = Math.min((trail.length - 1) * limit + 1, matched);
  const to = Math.min(from + Math.max(shown, 1) - 1, matched);
  return matched === total ? `${n(from)}–${n(to)} of ${all}` : `${n(from)}–${n(to)} of ${n(matched)} matching · ${all}`;
}
