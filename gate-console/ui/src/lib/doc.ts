// The graph document (v2, libs/schema) and the guided form's model of it.
// The form and the JSON editor edit one draft: docToForm and formToDoc are
// exact inverses over every document the schema admits, so switching views
// loses nothing (tested over libs/declare/testdata/golden).

export type Hop = string | string[];
export interface DocBudget {
  id?: string; count: number; timeMs: number; subWindows?: number; scopeBy?: string; sharedKey?: string;
  whenOp?: string[]; confidence?: "documented" | "inferred" | "assumed"; source?: string; asOf?: string;
  vendorMeter?: DocVendorMeter;
  // keys: limits per key, scope value → its own count per timeMs (rule budget-keys).
  keys?: Record<string, number>;
}
// DocVendorMeter: the budget follows the vendor's rate-limit headers (observe).
export interface DocVendorMeter { headers: string; name?: string }
export type DocCost = number | { path: string; default?: number; max?: number };
export type DocIngress = boolean | { queue?: string; partitions?: number; http?: boolean; shed?: boolean };
export type DocEgress = string | { queue: string; group?: string };
export interface DocNode { budgets?: DocBudget[]; cost?: DocCost; ingress?: DocIngress; egress?: DocEgress; batch?: number; concurrency?: number }
export interface DocPath { name: string; priority?: number; share?: number; nodes: Hop[] }
export interface GraphDoc {
  application?: string; graph?: string; version: number; nodes: Record<string, DocNode>; paths: DocPath[];
  maxAttempts?: number; counters?: { windowSeconds: number }; watch?: { durationSeconds: number; startedAt?: number };
}

export type Num = number | null;
export interface FormBudget {
  id: string | null; count: Num; timeMs: Num; subWindows: Num; scopeBy: string | null; sharedKey: string | null;
  whenOp: string[] | null; confidence: "" | "documented" | "inferred" | "assumed"; source: string | null; asOf: string | null;
  vendorMeter: DocVendorMeter | null;
  keys: Record<string, number> | null;
}
export interface FormNode {
  name: string;
  budgets: FormBudget[] | null; // null: the field is absent
  costKind: "absent" | "fixed" | "path"; costFixed: Num; costPath: string; costDefault: Num; costMax: Num;
  ingressKind: "absent" | "false" | "true" | "object"; ingressQueue: string | null; partitions: Num; http: boolean | null; shed: boolean | null;
  egressKind: "absent" | "string" | "object"; egressQueue: string; egressGroup: string | null;
  batch: Num; concurrency: Num;
}
export interface FormPath { name: string; priority: Num; share: Num; hops: string[][] }
export interface FormModel {
  legacy: unknown | null; // a v1 document: JSON only, gate-api maps it on save
  application: string | null; graph: string | null; version: Num; maxAttempts: Num;
  counters: Num; mode: "enforce" | "watch"; watchSeconds: Num; watchStartedAt: Num;
  nodes: FormNode[]; paths: FormPath[];
}

const opt = <T,>(v: T | undefined): T | null => (v === undefined ? null : v);
const put = (o: Record<string, unknown>, k: string, v: unknown) => { if (v !== null && v !== undefined) o[k] = v; };

export function isV1(doc: unknown): boolean {
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  return !("nodes" in d) && ("budgets" in d || "lanes" in d || "name" in d || "edges" in d);
}

export function emptyBudget(): FormBudget {
  return { id: null, count: null, timeMs: null, subWindows: null, scopeBy: null, sharedKey: null, whenOp: null, confidence: "assumed", source: null, asOf: null, vendorMeter: null, keys: null };
}
export function emptyNode(name: string): FormNode {
  return {
    name, budgets: [], costKind: "absent", costFixed: null, costPath: "", costDefault: null, costMax: null,
    ingressKind: "absent", ingressQueue: null, partitions: null, http: null, shed: null,
    egressKind: "absent", egressQueue: "", egressGroup: null, batch: null, concurrency: null,
  };
}

export function formBudget(b: DocBudget): FormBudget {
  return {
    id: opt(b.id), count: opt(b.count), timeMs: opt(b.timeMs), subWindows: opt(b.subWindows), scopeBy: opt(b.scopeBy),
    sharedKey: opt(b.sharedKey), whenOp: opt(b.whenOp), confidence: b.confidence ?? "", source: opt(b.source), asOf: opt(b.asOf),
    vendorMeter: b.vendorMeter ? { ...b.vendorMeter } : null,
    keys: b.keys ? { ...b.keys } : null,
  };
}
export function docBudget(b: FormBudget): DocBudget {
  const bo: Record<string, unknown> = {};
  put(bo, "id", b.id); put(bo, "count", b.count); put(bo, "timeMs", b.timeMs); put(bo, "subWindows", b.subWindows);
  put(bo, "scopeBy", b.scopeBy); put(bo, "sharedKey", b.sharedKey); put(bo, "whenOp", b.whenOp);
  if (b.confidence) bo.confidence = b.confidence;
  put(bo, "source", b.source); put(bo, "asOf", b.asOf);
  if (b.vendorMeter) bo.vendorMeter = { ...b.vendorMeter };
  if (b.keys) bo.keys = { ...b.keys };
  return bo as unknown as DocBudget;
}

export function docToForm(doc: unknown): FormModel {
  const base: FormModel = {
    legacy: null, application: null, graph: null, version: null, maxAttempts: null, counters: null,
    mode: "enforce", watchSeconds: null, watchStartedAt: null, nodes: [], paths: [],
  };
  if (isV1(doc) || !doc || typeof doc !== "object") return { ...base, legacy: doc };
  const d = doc as GraphDoc;
  const nodes: FormNode[] = Object.entries(d.nodes ?? {}).map(([name, n]) => {
    const f = emptyNode(name);
    f.budgets = n.budgets === undefined ? null : n.budgets.map(formBudget);
    if (typeof n.cost === "number") { f.costKind = "fixed"; f.costFixed = n.cost; }
    else if (n.cost && typeof n.cost === "object") { f.costKind = "path"; f.costPath = n.cost.path; f.costDefault = opt(n.cost.default); f.costMax = opt(n.cost.max); }
    if (n.ingress === true) f.ingressKind = "true";
    else if (n.ingress === false) f.ingressKind = "false";
    else if (n.ingress && typeof n.ingress === "object") {
      f.ingressKind = "object"; f.ingressQueue = opt(n.ingress.queue); f.partitions = opt(n.ingress.partitions);
      f.http = opt(n.ingress.http); f.shed = opt(n.ingress.shed);
    }
    if (typeof n.egress === "string") { f.egressKind = "string"; f.egressQueue = n.egress; }
    else if (n.egress && typeof n.egress === "object") { f.egressKind = "object"; f.egressQueue = n.egress.queue; f.egressGroup = opt(n.egress.group); }
    f.batch = opt(n.batch); f.concurrency = opt(n.concurrency);
    return f;
  });
  return {
    ...base,
    application: opt(d.application), graph: opt(d.graph), version: opt(d.version), maxAttempts: opt(d.maxAttempts),
    counters: d.counters ? d.counters.windowSeconds : null,
    mode: d.watch ? "watch" : "enforce", watchSeconds: d.watch ? d.watch.durationSeconds : null,
    watchStartedAt: d.watch ? opt(d.watch.startedAt) : null,
    nodes,
    paths: (d.paths ?? []).map((p) => ({
      name: p.name, priority: opt(p.priority), share: opt(p.share),
      hops: (p.nodes ?? []).map((h) => (Array.isArray(h) ? [...h] : [h])),
    })),
  };
}

export function formToDoc(f: FormModel): unknown {
  if (f.legacy !== null) return f.legacy;
  const d: Record<string, unknown> = {};
  put(d, "application", f.application);
  put(d, "graph", f.graph);
  put(d, "version", f.version);
  put(d, "maxAttempts", f.maxAttempts);
  if (f.counters !== null) d.counters = { windowSeconds: f.counters };
  if (f.mode === "watch") {
    const w: Record<string, unknown> = {};
    put(w, "durationSeconds", f.watchSeconds);
    put(w, "startedAt", f.watchStartedAt);
    d.watch = w;
  }
  const nodes: Record<string, unknown> = {};
  for (const n of f.nodes) {
    const o: Record<string, unknown> = {};
    if (n.budgets !== null) o.budgets = n.budgets.map(docBudget);
    if (n.costKind === "fixed") put(o, "cost", n.costFixed);
    if (n.costKind === "path") { const c: Record<string, unknown> = { path: n.costPath }; put(c, "default", n.costDefault); put(c, "max", n.costMax); o.cost = c; }
    if (n.ingressKind === "true") o.ingress = true;
    if (n.ingressKind === "false") o.ingress = false;
    if (n.ingressKind === "object") {
      const i: Record<string, unknown> = {};
      put(i, "queue", n.ingressQueue); put(i, "partitions", n.partitions); put(i, "http", n.http); put(i, "shed", n.shed);
      o.ingress = i;
    }
    if (n.egressKind === "string") o.egress = n.egressQueue;
    if (n.egressKind === "object") { const e: Record<string, unknown> = { queue: n.egressQueue }; put(e, "group", n.egressGroup); o.egress = e; }
    put(o, "batch", n.batch); put(o, "concurrency", n.concurrency);
    nodes[n.name] = o;
  }
  d.nodes = nodes;
  d.paths = f.paths.map((p) => {
    const o: Record<string, unknown> = { name: p.name };
    put(o, "priority", p.priority); put(o, "share", p.share);
    o.nodes = p.hops.map((h) => (h.length === 1 ? h[0] : [...h]));
    return o;
  });
  return d;
}

/** Deep equality that ignores object key order (JSON semantics). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) { const bb = b as unknown[]; return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i])); }
  const ao = a as Record<string, unknown>, bo = b as Record<string, unknown>;
  const ak = Object.keys(ao), bk = Object.keys(bo);
  return ak.length === bk.length && ak.every((k) => k in bo && jsonEqual(ao[k], bo[k]));
}

// ---- templates of the New target wizard ----
export type Template = "global" | "per-account" | "per-operation" | "shared";
export const templates: Record<Template, { title: string; explain: string; budgets: DocBudget[] }> = {
  global: {
    title: "Global", explain: "One ceiling for every item this target sends.",
    budgets: [{ id: "global", count: 100, timeMs: 1000, confidence: "assumed" }],
  },
  "per-account": {
    title: "Per account", explain: "A ceiling per value of a payload field (an account, a tenant), under a global ceiling that still holds.",
    budgets: [
      { id: "global", count: 100, timeMs: 1000, confidence: "assumed" },
      { id: "per-account", count: 10, timeMs: 1000, scopeBy: "payload.accountId", confidence: "assumed" },
    ],
  },
  "per-operation": {
    title: "Per operation", explain: "A tighter ceiling for some operations (payload.op), under a global ceiling that still holds.",
    budgets: [
      { id: "global", count: 100, timeMs: 1000, confidence: "assumed" },
      { id: "deletes", count: 20, timeMs: 60000, subWindows: 60, whenOp: ["delete.*"], confidence: "assumed" },
    ],
  },
  shared: {
    title: "Shared", explain: "A shared key joins an application-wide allowance: every node and graph of this application naming the same key spends one counter (one egress IP, one account quota).",
    budgets: [{ id: "shared", count: 1500, timeMs: 10000, subWindows: 10, sharedKey: "egress-ip", confidence: "assumed" }],
  },
};

export interface WizardInput {
  application: string; name: string; ingressQueue: string; partitions: number | null; egressQueue: string; egressGroup: string;
  mode: "enforce" | "watch"; watchSeconds: number; budgets: DocBudget[];
}

/** The one-node graph the wizard declares. */
export function wizardDoc(w: WizardInput): GraphDoc {
  const ingress: DocIngress = w.ingressQueue ? { queue: w.ingressQueue, ...(w.partitions ? { partitions: w.partitions } : {}) } : w.partitions ? { partitions: w.partitions } : true;
  const egress: DocEgress = w.egressGroup ? { queue: w.egressQueue, group: w.egressGroup } : w.egressQueue;
  const doc: GraphDoc = {
    application: w.application, graph: w.name, version: 1,
    nodes: { limit: { ingress, budgets: w.budgets, egress } },
    paths: [{ name: "main", nodes: ["limit"] }],
    counters: { windowSeconds: 60 },
  };
  if (w.mode === "watch") doc.watch = { durationSeconds: w.watchSeconds };
  return doc;
}

export const WATCH_MIN = 120, WATCH_MAX = 2592000;

/** Clone: new name, version 1, Watch timer reset, Gate-owned ingress, outgoing queues to be named anew. */
export function cloneDoc(src: GraphDoc, graph: string): { doc: GraphDoc; sharedKeys: string[]; egressNodes: string[] } {
  const doc = JSON.parse(JSON.stringify(src)) as GraphDoc;
  doc.graph = graph;
  doc.version = 1;
  if (doc.watch) doc.watch = { durationSeconds: doc.watch.durationSeconds };
  const sharedKeys = new Set<string>();
  const egressNodes: string[] = [];
  for (const [name, n] of Object.entries(doc.nodes)) {
    if (n.ingress && typeof n.ingress === "object") {
      const { queue: _q, http: _h, ...rest } = n.ingress;
      n.ingress = Object.keys(rest).length ? rest : true;
    }
    if (n.egress !== undefined) { n.egress = typeof n.egress === "string" ? "" : { ...n.egress, queue: "" }; egressNodes.push(name); }
    for (const b of n.budgets ?? []) if (b.sharedKey) sharedKeys.add(b.sharedKey);
  }
  return { doc, sharedKeys: [...sharedKeys], egressNodes };
}

/** Split a JSON pointer into its segments. */
export function pointer(at: string): string[] {
  return at.split("/").slice(1).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** A path's hops as the form's one-line text: "a → b → c + d". */
export const hopsText = (hops: string[][]) => hops.map((h) => h.join(" + ")).join(" → ");
export const parseHops = (t: string) => t.split(/→|->|>/).map((h) => h.split("+").map((s) => s.trim()).filter(Boolean)).filter((h) => h.length > 0);

/** keysText writes limits per key one "value = count" per line, in value order. */
export function keysText(keys: Record<string, number> | null): string {
  if (!keys) return "";
  return Object.keys(keys).sort().map((k) => `${k} = ${keys[k]}`).join("\n");
}

/**
 * parseKeys reads "value = count" lines (the last "=" separates, blank
 * lines are skipped): the map, or the first line that is not one.
 */
export function parseKeys(text: string): { keys: Record<string, number> | null; bad: number | null } {
  const keys: Record<string, number> = {};
  const lines = text.split("\n");
  let any = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "") continue;
    const m = /^(.*\S)\s*=\s*(-?\d+)$/.exec(line);
    if (!m) return { keys: null, bad: i + 1 };
    keys[m[1]] = Number(m[2]);
    any = true;
  }
  return { keys: any ? keys : null, bad: null };
}
