// Unsaved drafts of an existing graph, kept per browser tab so that what
// "Configure limits" (or any edit) is about to save survives a switch to the
// Watch tab, where "Simulate the whole graph" replays it. A draft remembers
// the stored version it started from: once another version is stored it no
// longer describes a change to what runs, and it is dropped.

/** Where drafts live: sessionStorage in the browser; any Storage in tests. */
export interface DraftStore { getItem(k: string): string | null; setItem(k: string, v: string): void; removeItem(k: string): void }

export interface Draft {
  /** The stored version the draft was made from. */
  base: number;
  /** The candidate document, as the editor would send it. */
  doc: unknown;
  /** When it was last edited (ms). */
  at: number;
}

const key = (app: string, graph: string) => `gate-draft:${app}/${graph}`;

function store(s?: DraftStore): DraftStore | null {
  if (s) return s;
  try { return typeof sessionStorage === "undefined" ? null : sessionStorage; } catch { return null; }
}

/** The draft of app/graph made from stored version base, or null (a draft of another version is dropped). */
export function readDraft(app: string, graph: string, base: number, s?: DraftStore): Draft | null {
  const st = store(s);
  if (!st) return null;
  const raw = st.getItem(key(app, graph));
  if (raw === null) return null;
  let d: Draft | null = null;
  try { d = JSON.parse(raw) as Draft; } catch { d = null; }
  if (!d || typeof d.base !== "number" || typeof d.at !== "number" || d.doc === null || typeof d.doc !== "object" || d.base !== base) {
    st.removeItem(key(app, graph));
    return null;
  }
  return d;
}

/** Keep doc as the unsaved draft of app/graph, made from stored version base. */
export function keepDraft(app: string, graph: string, base: number, doc: unknown, at: number, s?: DraftStore): void {
  const st = store(s);
  if (!st) return;
  try { st.setItem(key(app, graph), JSON.stringify({ base, doc, at } satisfies Draft)); } catch { /* storage full or refused: the draft stays in the editor only */ }
}

/** Forget the draft of app/graph (saved, cancelled or discarded). */
export function dropDraft(app: string, graph: string, s?: DraftStore): void {
  store(s)?.removeItem(key(app, graph));
}

// A new graph's or the wizard's typed work, kept per tab (sessionStorage)
// until it is created or discarded: a reload, a Back or a visit to
// another page gives it back.
const newKey = (kind: string) => `gate-new:${kind}`;

/** The kept work of a create form (kind "graph" or "wizard"), or null. */
export function readNew<T>(kind: string, s?: DraftStore): T | null {
  const st = store(s);
  const raw = st?.getItem(newKey(kind)) ?? null;
  if (raw === null) return null;
  try {
    const v = JSON.parse(raw) as { at?: unknown; value?: unknown };
    if (typeof v.at !== "number" || v.value === null || typeof v.value !== "object") throw new Error("not a draft");
    return v.value as T;
  } catch {
    st?.removeItem(newKey(kind));
    return null;
  }
}

export function keepNew(kind: string, value: unknown, at: number, s?: DraftStore): void {
  try { store(s)?.setItem(newKey(kind), JSON.stringify({ at, value })); } catch { /* storage full or refused */ }
}

export function dropNew(kind: string, s?: DraftStore): void {
  store(s)?.removeItem(newKey(kind));
}
