// The unsaved-draft store the editor writes and the Watch page's
// whole-graph simulation reads: a draft is the one made from the stored
// version on screen, or none.
import { test } from "node:test";
import assert from "node:assert/strict";
import { dropDraft, keepDraft, readDraft, type DraftStore } from "../../src/lib/draft";

function memory(): DraftStore & { size: () => number } {
  const m = new Map<string, string>();
  return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v), removeItem: (k) => void m.delete(k), size: () => m.size };
}

const doc = { version: 4, nodes: { api: { ingress: true, budgets: [{ id: "b", count: 2, timeMs: 1000 }] } }, paths: [{ name: "main", nodes: ["api"] }] };

test("a kept draft reads back whole for the graph and stored version it was made from", () => {
  const s = memory();
  keepDraft("shop", "trial", 3, doc, 1700000000000, s);
  const d = readDraft("shop", "trial", 3, s);
  assert.deepEqual(d, { base: 3, doc, at: 1700000000000 });
  assert.equal(readDraft("shop", "other", 3, s), null, "a draft of another graph was returned");
  assert.equal(readDraft("other", "trial", 3, s), null, "a draft of another application was returned");
});

test("a draft made from another stored version is dropped, not simulated", () => {
  const s = memory();
  keepDraft("shop", "trial", 3, doc, 1, s);
  assert.equal(readDraft("shop", "trial", 4, s), null);
  assert.equal(s.size(), 0, "the stale draft was kept");
  assert.equal(readDraft("shop", "trial", 3, s), null, "dropped means gone for the old version too");
});

test("an unreadable entry is dropped; dropDraft forgets the draft", () => {
  const s = memory();
  s.setItem("gate-draft:shop/trial", "{not json");
  assert.equal(readDraft("shop", "trial", 3, s), null);
  assert.equal(s.size(), 0);
  s.setItem("gate-draft:shop/trial", JSON.stringify({ base: 3, at: 1, doc: null }));
  assert.equal(readDraft("shop", "trial", 3, s), null, "a draft without a document was returned");
  keepDraft("shop", "trial", 3, doc, 1, s);
  dropDraft("shop", "trial", s);
  assert.equal(readDraft("shop", "trial", 3, s), null);
});

test("a newer keep replaces the older draft", () => {
  const s = memory();
  keepDraft("shop", "trial", 3, doc, 1, s);
  const tighter = { ...doc, nodes: { api: { ...doc.nodes.api, budgets: [{ id: "b", count: 1, timeMs: 1000 }] } } };
  keepDraft("shop", "trial", 3, tighter, 2, s);
  assert.deepEqual(readDraft("shop", "trial", 3, s)?.doc, tighter);
  assert.equal(s.size(), 1);
});

test("the wizard's and New graph's typed work is kept per tab until dropped; a corrupt entry is dropped", async () => {
  const { readNew, keepNew, dropNew, readTried, keepTried } = await import("../../src/lib/draft");
  const s = memory();
  assert.equal(readNew("wizard", s), null);
  keepNew("wizard", { name: "payments", step: 2 }, 1700000000000, s);
  assert.deepEqual(readNew("wizard", s), { name: "payments", step: 2 });
  dropNew("wizard", s);
  assert.equal(readNew("wizard", s), null);
  s.setItem("gate-new:graph", "{not json");
  assert.equal(readNew("graph", s), null);
  assert.equal(s.size(), 0, "a corrupt draft was kept");
  keepTried("shop", "trial", { node: "api", count: 5, timeMs: 1000, subWindows: null, at: 1 }, s);
  assert.deepEqual(readTried("shop", "trial", s), { node: "api", count: 5, timeMs: 1000, subWindows: null, at: 1 });
  s.setItem("gate-tried:shop/trial", JSON.stringify({ node: "api", count: -1, timeMs: 1000, subWindows: null, at: 1 }));
  assert.equal(readTried("shop", "trial", s), null, "a negative count was offered as a limit");
});
