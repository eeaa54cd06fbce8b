// Shadow limits in the console (issue 27): the node panel says "if
// enforced: …" as the server wrote it, and Enforce turns the candidate into
// the enforced limits in one edit that starts with the save flow's check —
// the server's dry run with If-Match — never with a write.
import "./support/dom";
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement as h, isValidElement, type ReactElement, type ReactNode } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import type { Diff, DryRun, Shadow } from "../../src/wire";
import { ApiError, type Loaded } from "../../src/lib/api";
import { enforceDoc, ShadowCard, ShadowNote } from "../../src/lib/shadow";
import type { SaveTarget, useSaveFlow } from "../../src/lib/save";

type Flow = ReturnType<typeof useSaveFlow>;

const stored = {
  application: "shop", graph: "pay", version: 4,
  watch: { durationSeconds: 3600, startedAt: 1 },
  nodes: {
    call: { ingress: true, budgets: [{ id: "call-1s", count: 100, timeMs: 1000 }], egress: "shop.out" },
    ip: { budgets: [{ id: "ip", count: 500, timeMs: 1000, sharedKey: "egress-ip" }] },
  },
  paths: [{ name: "main", nodes: ["call", "ip"] }],
};

const shadow: Shadow = {
  application: "shop", graph: "pay", set: true, since: Date.UTC(2026, 11, 2, 9, 0, 0), setBy: "ann@example.com", basedOn: "\"e4\"", current: true,
  recording: "forwarded", minutes: 60, evaluatedThrough: Date.UTC(2026, 11, 2, 9, 2, 0), unsupported: [], assumes: [],
  nodes: [{
    node: "call", budgets: [{ id: "call-1s", count: 50, timeMs: 1000 }],
    ifEnforced: { arrived: 100, delayed: 95, backlog: 0, peakBacklog: 95, delayMaxMs: 19000, oldestWaitingMs: 0, approximate: 0 },
    sentence: "if enforced: 95 of 100 items delayed over 2 minutes, up to 19 s; no backlog",
    perMinute: [], notes: [],
  }],
};

const loaded = (data: Shadow | null, error: ApiError | null = null): Loaded<Shadow> => ({ data, error, loading: false, reload: () => {} });

function flowWith(stage: Flow["stage"], calls: SaveTarget[] = [], confirms: string[] = []): Flow {
  return {
    stage, busy: false, cancel: () => {},
    check: async (t: SaveTarget) => { calls.push(t); },
    confirm: async () => { confirms.push("confirm"); },
  };
}

// Every host element of a rendered tree (function components are not expanded).
function elements(node: ReactNode, out: ReactElement[] = []): ReactElement[] {
  if (Array.isArray(node)) { for (const n of node) elements(n, out); return out; }
  if (!isValidElement(node)) return out;
  out.push(node);
  const props = node.props as { children?: ReactNode };
  elements(props.children, out);
  return out;
}

test("the node panel says 'if enforced' in the server's words, only for the candidate's nodes", () => {
  const html = renderToStaticMarkup(h(ShadowNote, { shadow, node: "call" }));
  assert.match(html, /data-testid="shadow-note"/);
  assert.match(html, /if enforced: 95 of 100 items delayed over 2 minutes, up to 19 s; no backlog/);
  assert.equal(renderToStaticMarkup(h(ShadowNote, { shadow, node: "ip" })), "");
  assert.equal(renderToStaticMarkup(h(ShadowNote, { shadow: null, node: "call" })), "");
});

test("enforcing replaces only the candidate's budgets, raises the version and leaves Watch", () => {
  const doc = enforceDoc(stored, shadow);
  assert.deepEqual(doc.nodes?.call.budgets, [{ id: "call-1s", count: 50, timeMs: 1000 }]);
  assert.deepEqual(doc.nodes?.ip, stored.nodes.ip);
  assert.equal(doc.version, 5);
  assert.equal(doc.watch, undefined);
  assert.deepEqual(doc.paths, stored.paths);
  assert.equal(stored.version, 4, "the stored document is not modified");
});

test("Enforce starts the save flow's check (the dry run with If-Match), never a write", () => {
  const calls: SaveTarget[] = [];
  const confirms: string[] = [];
  const card = ShadowCard({ app: "shop", graph: "pay", spec: stored, etag: "\"e4\"", shadow: loaded(shadow), canWrite: true, flow: flowWith({ kind: "idle" }, calls, confirms), onStop: () => {} });
  const html = renderToStaticMarkup(card);
  assert.match(html, /data-testid="shadow-sentence">if enforced: 95 of 100 items delayed/);
  const button = elements(card).find((e) => (e.props as Record<string, unknown>)["data-testid"] === "enforce-shadow");
  assert.ok(button, "no Enforce button for a writer");
  (button.props as { onClick: () => void }).onClick();
  assert.equal(calls.length, 1);
  assert.deepEqual(confirms, [], "Enforce wrote without a review");
  const t = calls[0];
  assert.equal(t.create, false);
  assert.equal(t.etag, "\"e4\"", "the check must carry the ETag the page read (If-Match)");
  assert.deepEqual(t.doc, enforceDoc(stored, shadow));
});

test("the dry run's review is shown with the diff before anything is enforced; viewers get no button", () => {
  const diff: Diff = {
    created: false, deleted: false, changed: true, fromVersion: 4, toVersion: 5, mode: { from: "watch", to: "enforce" },
    nodes: [{ node: "call", change: "changed", fields: [], budgets: [{ budget: "call-1s", change: "changed",
      from: { key: "k", count: 100, timeMs: 1000, subWindows: 1, countSub: 100, windowSubSeconds: 1, scopeBy: null, sharedKey: null, whenOp: [], ceilings: [] },
      to: { key: "k", count: 50, timeMs: 1000, subWindows: 1, countSub: 50, windowSubSeconds: 1, scopeBy: null, sharedKey: null, whenOp: [], ceilings: [] } }] }],
    paths: [], queues: [], groups: [], counters: [], settings: [],
  };
  const dry: DryRun = { ok: true, application: "shop", graph: "pay", version: 5, resolved: { namespace: "gate.shop", queues: [], stages: [], counters: 0, nodes: [] },
    warnings: ["a warning from the server"], trust: "", dryRun: true, etag: "\"e5\"", storedEtag: "\"e4\"", diff };
  const html = renderToStaticMarkup(h(ShadowCard, { app: "shop", graph: "pay", spec: stored, etag: "\"e4\"", shadow: loaded(shadow), canWrite: true,
    flow: flowWith({ kind: "review", dry, pre: { ifMatch: "\"e4\"" }, overtaken: null }), onStop: () => {} }));
  assert.match(html, /data-testid="review"/);
  assert.match(html, /Review before enforce/);
  assert.match(html, /a warning from the server/);
  assert.match(html, /data-testid="confirm-save"[^>]*>Confirm: enforce/);
  const viewer = renderToStaticMarkup(h(ShadowCard, { app: "shop", graph: "pay", spec: stored, etag: "\"e4\"", shadow: loaded(shadow), canWrite: false, flow: flowWith({ kind: "idle" }), onStop: () => {} }));
  assert.doesNotMatch(viewer, /enforce-shadow/);
});

test("no candidate and no history read as such, never as an error", () => {
  assert.equal(renderToStaticMarkup(h(ShadowNote, { shadow: { ...shadow, set: false }, node: "call" })), "");
  const none = renderToStaticMarkup(h(ShadowCard, { app: "shop", graph: "pay", spec: stored, etag: null, canWrite: true, flow: flowWith({ kind: "idle" }), onStop: () => {},
    shadow: loaded({ ...shadow, set: false, nodes: [] }) }));
  assert.match(none, /data-testid="shadow-none"/);
  assert.doesNotMatch(none, /error-state/);
  const off = renderToStaticMarkup(h(ShadowCard, { app: "shop", graph: "pay", spec: stored, etag: null, canWrite: true, flow: flowWith({ kind: "idle" }), onStop: () => {},
    shadow: loaded(null, new ApiError(503, "set PG_HOST", { error: "set PG_HOST", code: "no-history" })) }));
  assert.match(off, /Shadow limits are off: they need the PostgreSQL history \(PG_HOST\)/);
  assert.doesNotMatch(off, /error-state/);
});

test("a scoped candidate judged in part without its values says 'approximate' and shows the server's notes", () => {
  const keyed: Shadow = {
    ...shadow,
    nodes: [{
      ...shadow.nodes[0],
      budgets: [{ id: "call-1s", count: 100, timeMs: 1000 }, { id: "per-account", count: 5, timeMs: 1000, scopeBy: "payload.account" }],
      ifEnforced: { ...shadow.nodes[0].ifEnforced, approximate: 40 },
      sentence: "if enforced: 95 of 100 items delayed over 2 minutes, up to 19 s; no backlog (approximate: 40 items judged without their scope value or op)",
      notes: ["approximate: 40 of 100 items were judged without their scope value or op"],
    }],
  };
  const html = renderToStaticMarkup(h(ShadowCard, { app: "shop", graph: "pay", spec: stored, etag: "\"e4\"", shadow: loaded(keyed), canWrite: false, flow: flowWith({ kind: "idle" }), onStop: () => {} }));
  assert.match(html, /data-testid="shadow-approximate"[^>]*>approximate</);
  assert.match(html, /data-testid="shadow-notes"/);
  assert.match(html, /<strong>call<\/strong>: approximate: 40 of 100 items were judged without their scope value or op/);
  assert.match(renderToStaticMarkup(h(ShadowNote, { shadow: keyed, node: "call" })), /\(approximate: 40 items judged without their scope value or op\)/);
  // Exact figures carry neither.
  const exact = renderToStaticMarkup(h(ShadowCard, { app: "shop", graph: "pay", spec: stored, etag: "\"e4\"", shadow: loaded(shadow), canWrite: false, flow: flowWith({ kind: "idle" }), onStop: () => {} }));
  assert.doesNotMatch(exact, /shadow-approximate|shadow-notes/);
});
