// The forms' pieces rendered to markup (react-dom/server): the window hint
// says what Gate will enforce, the save refusals say what happened and
// where to go, the diff and the warnings read as the server wrote them.
import "./support/dom";
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement as h } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import type { Diff, Resolved } from "../../src/wire";
import { BudgetEditor, EnforcedContext, ProblemsContext, TextField } from "../../src/lib/form";
import { emptyBudget, type FormBudget } from "../../src/lib/doc";
import { DiffView, Warnings } from "../../src/lib/diffview";
import { SavePanel, type useSaveFlow } from "../../src/lib/save";

const budget = (count: number, timeMs: number): FormBudget => ({ ...emptyBudget(), id: "global", count, timeMs });
const hint = (b: FormBudget, resolved: Resolved | null) => {
  const html = renderToStaticMarkup(h(EnforcedContext.Provider, { value: resolved }, h(BudgetEditor, { budgets: [b], onChange: () => {}, base: "/nodes/limit/budgets" })));
  const m = /data-testid="window-hint">([^<]*)</.exec(html);
  assert.ok(m, `no window hint in ${html.slice(0, 300)}`);
  return m[1];
};
const resolved = (count: number, timeMs: number, countSub: number, windowSubSeconds: number, subWindows: number): Resolved => ({
  namespace: "gate.shop", queues: [], stages: [], counters: 60,
  nodes: [{ node: "limit", ingressQueue: null, httpPush: true, egressQueue: "q", egressGroup: "workers", breakerKey: "k", shares: {},
    budgets: [{ id: "global", key: "b:shop:g:limit:global", scopeBy: null, sharedKey: null, count, timeMs, subWindows, countSub, windowSubSeconds, ceilings: {} }] }],
});

test("the hint under a sub-second window says what the server will enforce, never '= 1 s'", () => {
  const text = hint(budget(10, 500), resolved(10, 500, 10, 1, 1));
  assert.equal(text, "not whole seconds per sub-window: enforced tighter, as 10 per 1 s × 1 sub-window");
  // The server's own rule (libs/declare wholeWindow): sub-window seconds × 1000 × sub-windows = timeMs.
  assert.equal(hint(budget(100, 10000), resolved(100, 10000, 10, 1, 10)), "enforced as 10 per 1 s × 10 sub-windows");
});

test("before the dry run answers (or for another draft) the hint never claims a number it does not know", () => {
  assert.match(hint(budget(10, 500), null), /^500 ms is not whole seconds: Gate enforces whole-second sub-windows/);
  // A dry run of another count does not describe this draft.
  assert.match(hint(budget(10, 500), resolved(20, 500, 20, 1, 1)), /^500 ms is not whole seconds/);
  assert.equal(hint(budget(10, 2000), null), "= 2 s");
  assert.equal(hint({ ...budget(10, 0), timeMs: null }, null), "at least 100");
});

test("a problem at a field is shown there and marks the input invalid", () => {
  const html = renderToStaticMarkup(h(ProblemsContext.Provider, { value: [{ rule: "name", message: "name the graph", at: "/graph" }] },
    h(TextField, { label: "name", at: "/graph", value: null, onChange: () => {} })));
  assert.match(html, /aria-invalid="true"/);
  assert.match(html, /data-error-at="\/graph"[^>]*>.*\[name\].*name the graph/);
});

type Flow = ReturnType<typeof useSaveFlow>;
const flow = (stage: Flow["stage"]): Flow => ({ stage, check: async () => {}, confirm: async () => {}, cancel: () => {}, busy: false });

test("a create over an existing name says it exists, who stored it, and links to it", () => {
  const html = renderToStaticMarkup(h(SavePanel, { flow: flow({ kind: "exists", app: "shop", graph: "payments", body: { error: "x", code: "precondition-failed", storedVersion: 3, changedBy: "ann@example.com", changedAt: Date.UTC(2026, 11, 2, 9, 14, 3) } }), verb: "Create" }));
  assert.match(html, /shop\/payments exists already/);
  assert.match(html, /version 3, stored by ann@example\.com, 2026-12-02 \d\d:14:03/);
  assert.match(html, /href="\/graphs\/shop\/payments"/);
  assert.match(html, /Nothing was stored/);
});

const diff: Diff = {
  created: false, deleted: false, changed: true, fromVersion: 3, toVersion: 4, mode: { from: "watch", to: "enforce" },
  nodes: [{ node: "limit", change: "changed", fields: [], budgets: [{ budget: "global", change: "changed",
    from: { key: "k", count: 100, timeMs: 1000, subWindows: 10, countSub: 10, windowSubSeconds: 1, scopeBy: null, sharedKey: null, whenOp: [], ceilings: [] },
    to: { key: "k", count: 10, timeMs: 500, subWindows: 1, countSub: 10, windowSubSeconds: 1, scopeBy: null, sharedKey: null, whenOp: [], ceilings: [] } }] }],
  paths: [], queues: [{ queue: "shop.old.out", change: "removed", from: { kind: "egress", ownedByGate: false, partitions: null }, to: null }],
  groups: [], counters: [], settings: [],
};

test("the review shows old → new enforced numbers, the mode change, and a queue left unused", () => {
  const html = renderToStaticMarkup(h(SavePanel, { flow: flow({ kind: "review", dry: { ok: true, application: "shop", graph: "payments", version: 4, resolved: resolved(10, 500, 10, 1, 1), warnings: ["[window-sub-second] budget \"global\" of node \"limit\" declares 10 per 500ms but is enforced as 10 per 1s"], trust: "", dryRun: true, etag: "\"a\"", storedEtag: "\"b\"", diff }, pre: { ifMatch: "\"b\"" }, overtaken: null }), verb: "Save" }));
  assert.match(html, /Version 3 → 4/);
  assert.match(html, /Limits activated/);
  assert.match(html, /100 per 1 s, enforced as 10 per 1 s × 10 sub-windows/);
  assert.match(html, /10 per 500 ms \(500 ms\), enforced as 10 per 1 s × 1 sub-window/);
  assert.match(html, /shop\.old\.out<\/code>: left unused/);
  assert.match(html, /<code>\[window-sub-second\]<\/code>/);
  assert.match(html, /Confirm: save/);
  assert.doesNotMatch(html, /over their change/);
});

test("an overtaken edit says so and offers to save over their change", () => {
  const html = renderToStaticMarkup(h(SavePanel, { flow: flow({ kind: "review", dry: { ok: true, application: "shop", graph: "payments", version: 4, resolved: resolved(10, 500, 10, 1, 1), warnings: [], trust: "", dryRun: true, etag: "\"a\"", storedEtag: "\"c\"", diff }, pre: { ifMatch: "\"c\"" }, overtaken: { error: "changed", code: "precondition-failed", storedVersion: 4, changedBy: "api" } }), verb: "Save" }));
  assert.match(html, /Someone else changed shop\/payments since you opened it/);
  assert.match(html, /version 4, stored by api/);
  assert.match(html, /Save over their change/);
});

test("no change is said as such; warnings keep their rule", () => {
  const same = renderToStaticMarkup(h(DiffView, { diff: { ...diff, changed: false, mode: null, nodes: [], queues: [] } }));
  assert.match(same, /No change/);
  assert.equal(renderToStaticMarkup(h(Warnings, { warnings: [] })), "");
  assert.match(renderToStaticMarkup(h(Warnings, { warnings: ["[egress-owner] queue q is delivered to by shop/other"] })), /data-rule="egress-owner"/);
});

test("a scoped budget's limits per key are edited as value = count lines; an unscoped one without keys has no such field", () => {
  const editor = (b: FormBudget) => renderToStaticMarkup(h(BudgetEditor, { budgets: [b], onChange: () => {}, base: "/nodes/limit/budgets" }));
  const scoped = editor({ ...budget(60, 60000), scopeBy: "payload.customer", keys: { "trial-7": 6, "acme-enterprise": 600 } });
  const m = /<textarea[^>]*data-testid="budget-keys"[^>]*>([^<]*)<\/textarea>/.exec(scoped);
  assert.ok(m, `no keys field in ${scoped.slice(0, 400)}`);
  assert.equal(m[1], "acme-enterprise = 600\ntrial-7 = 6");
  assert.match(scoped, /data-at="\/nodes\/limit\/budgets\/0\/keys"/);
  assert.match(scoped, /higher or lower than 60/);
  assert.doesNotMatch(editor(budget(100, 1000)), /budget-keys/);
});
