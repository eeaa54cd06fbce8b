// The lists' server-side paging in React: a page loaded (and polled) for
// the filters in the URL, Previous/Next over the server's cursors, a
// search field that asks the server once typing pauses, and the pager bar.
import { useEffect, useId, useRef, useState } from "react";
import { ApiError, useLoad } from "./api";
import { back, current, firstPage, forward, rangeText, type ListQuery, type Page, type Trail } from "./paging";

/** The rows a list page asks for. */
export const PAGE_SIZE = 50;

export interface Paged<T> {
  /** The page shown: null until the first answer. */
  data: Page<T> | null;
  error: ApiError | null;
  /** True while the page for the current filters and cursor is not here yet. */
  loading: boolean;
  trail: Trail;
  next: () => void;
  prev: () => void;
}

/**
 * One page of a list for the filters given (q, app, state), polled every
 * pollMs. Changing a filter starts again at the first page; Previous and
 * Next walk the server's cursors.
 */
export function usePaged<T>(load: (q: ListQuery) => Promise<Page<T>>, filters: Omit<ListQuery, "cursor" | "limit">, pollMs: number, limit = PAGE_SIZE): Paged<T> {
  const key = JSON.stringify([filters.q?.trim() ?? "", filters.app ?? "", filters.state ?? "", limit]);
  const [walk, setWalk] = useState<{ key: string; trail: Trail }>({ key, trail: firstPage });
  const trail = walk.key === key ? walk.trail : firstPage;
  const cursor = current(trail);
  const want = key + "|" + cursor;
  const page = useLoad(async () => ({ want, page: await load({ ...filters, limit, cursor }) }), [want], pollMs);
  const data = page.data?.page ?? null;
  return {
    data,
    error: page.error,
    loading: page.data?.want !== want && !page.error,
    trail,
    next: () => setWalk({ key, trail: forward(trail, data?.next) }),
    prev: () => setWalk({ key, trail: back(trail) }),
  };
}

/** Previous / Next and the line saying which rows are shown. */
export function Pager<T>({ list, noun, limit = PAGE_SIZE, testid }: { list: Paged<T>; noun: [string, string]; limit?: number; testid?: string }) {
  const d = list.data;
  const text = d ? rangeText(list.trail, limit, d.items.length, d.matched, d.total, noun) : "";
  return (
    <nav className="pager" aria-label={`${noun[1]} pages`} data-testid={testid}>
      <button type="button" onClick={list.prev} disabled={list.trail.length < 2 || list.loading}>← Previous</button>
      <span role="status" aria-live="polite" className="muted small">{list.loading ? "Loading…" : text}</span>
      <button type="button" onClick={list.next} disabled={!d?.next || list.loading}>Next →</button>
    </nav>
  );
}

/**
 * A search box whose value reaches onChange (the URL, the server) once
 * typing pauses for a quarter of a second, so a list is not asked for at
 * every keystroke. Enter applies it at once.
 */
export function SearchField({ value, onChange, label, placeholder, testid }: { value: string; onChange: (v: string) => void; label: string; placeholder: string; testid?: string }) {
  const [text, setText] = useState(value);
  const id = useId();
  const timer = useRef<number | undefined>(undefined);
  const latest = useRef(onChange);
  latest.current = onChange;
  // The URL changed from elsewhere (back button, a link): show it.
  useEffect(() => { setText(value); }, [value]);
  useEffect(() => () => window.clearTimeout(timer.current), []);
  const apply = (v: string) => { window.clearTimeout(timer.current); latest.current(v.trim()); };
  return (
    <label className="field" htmlFor={id}><span className="name">{label}</span>
      <input id={id} type="search" value={text} placeholder={placeholder} maxLength={128} data-testid={testid}
        onChange={(e) => {
          const v = e.target.value;
          setText(v);
          window.clearTimeout(timer.current);
          timer.current = window.setTimeout(() => latest.current(v.trim()), 250);
        }}
        onKeyDown={(e) => { if (e.key === "Enter") apply(text); }} />
    </label>
  );
}
