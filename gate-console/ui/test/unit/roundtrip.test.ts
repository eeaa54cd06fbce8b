// Form ↔ JSON over every golden document of libs/declare/testdata: the
// guided form and the JSON editor share one draft, so switching views must
// keep limits, cost settings, shared counters and paths exactly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { cloneDoc, docToForm, formToDoc, hopsText, isV1, jsonEqual, parseHops, templates, wizardDoc, type FormModel, type GraphDoc } from "../../src/lib/doc";
import { graphValidator } from "../../src/lib/schema";

const golden = fileURLToPath(new URL("../../../../libs/declare/testdata/golden/", import.meta.url));
const files = readdirSync(golden).filter((f) => f.endsWith(".in.json") || f.endsWith(".stored.json")).sort();
/** Every document: each *.in.json, and each body of a *.stored.json listing. */
const documents: [string, unknown][] = files.flatMap((f) => {
  const v = JSON.parse(readFileSync(golden + f, "utf8"));
  return f.endsWith(".stored.json") ? (v as { name: string; body: unknown }[]).map((s) => [`${f}#${s.name}`, s.body] as [string, unknown]) : [[f, v] as [string, unknown]];
});

/** What the editor does on a view switch: form → JSON text → form. */
const viaJSON = (m: FormModel) => docToForm(JSON.parse(JSON.stringify(formToDoc(m), null, 2)));

test("there are golden documents to check", () => {
  assert.ok(documents.length >= 13, `only ${documents.length} golden documents found in ${golden}`);
});

for (const [f, doc] of documents) {
  test(`${f}: form → JSON → form keeps every field`, () => {
    const m = docToForm(doc);
    assert.ok(jsonEqual(formToDoc(m), doc), `formToDoc(docToForm(doc)) differs:\n${JSON.stringify(formToDoc(m))}\n${JSON.stringify(doc)}`);
    const twice = viaJSON(viaJSON(m));
    assert.deepEqual(twice, m, "two view switches changed the form model");
    assert.ok(jsonEqual(formToDoc(twice), doc));
  });
  if (isV1(doc)) {
    test(`${f}: a v1 document is kept whole for the JSON view`, () => {
      const m = docToForm(doc);
      assert.notEqual(m.legacy, null);
      assert.ok(jsonEqual(formToDoc(viaJSON(m)), doc));
    });
    continue;
  }
  test(`${f}: an edit in the form survives the switch to JSON and back`, () => {
    const m = docToForm(doc);
    const ni = m.nodes.findIndex((n) => (n.budgets ?? []).length > 0);
    if (ni < 0) {
      // A Watch document with no budget: edit the period and the version instead.
      assert.equal(m.mode, "watch", "an enforced golden document with no budget");
      const back = viaJSON({ ...m, watchSeconds: 777, version: (m.version ?? 0) + 1 });
      assert.equal(back.watchSeconds, 777);
      assert.equal(back.version, (m.version ?? 0) + 1);
      assert.deepEqual(back.nodes, m.nodes);
      assert.deepEqual(back.paths, m.paths);
      return;
    }
    const edited: FormModel = { ...m, nodes: m.nodes.map((n, i) => (i === ni ? { ...n, budgets: n.budgets!.map((b, j) => (j === 0 ? { ...b, count: 4242 } : b)) } : n)) };
    const back = viaJSON(edited);
    assert.equal(back.nodes[ni].budgets![0].count, 4242);
    // Everything else is as it was.
    const d0 = formToDoc(m) as GraphDoc, d1 = formToDoc(back) as GraphDoc;
    const name = m.nodes[ni].name;
    d1.nodes[name].budgets![0].count = d0.nodes[name].budgets![0].count;
    assert.ok(jsonEqual(d0, d1));
  });
  test(`${f}: path hops survive the form's one-line path editor`, () => {
    for (const p of docToForm(doc).paths) assert.deepEqual(parseHops(hopsText(p.hops)), p.hops);
  });
}

test("every golden v2 document the compiler accepts matches the JSON Schema", () => {
  let checked = 0;
  for (const f of files.filter((x) => x.endsWith(".in.json"))) {
    const doc = JSON.parse(readFileSync(golden + f, "utf8"));
    const findings = JSON.parse(readFileSync(golden + f.replace(/\.in\.json$/, ".findings.json"), "utf8"));
    if (isV1(doc) || findings.status !== 200) continue;
    assert.deepEqual(graphValidator.validate(doc), [], `${f} should match the schema`);
    checked++;
  }
  assert.ok(checked >= 8, `only ${checked} accepted documents checked`);
});

test("schema problems are reported at the field they name", () => {
  const doc = JSON.parse(readFileSync(golden + "airbnb.in.json", "utf8"));
  doc.nodes.prices.budgets[0].count = 0;
  doc.nodes.ip.budgets[0].colour = "red";
  doc.paths[1].share = 1.5;
  delete doc.nodes.photos.budgets[0].timeMs;
  const at = graphValidator.validate(doc).map((p) => p.at);
  for (const want of ["/nodes/prices/budgets/0/count", "/nodes/ip/budgets/0/colour", "/paths/1/share", "/nodes/photos/budgets/0/timeMs"]) assert.ok(at.includes(want), `no problem at ${want}: ${JSON.stringify(at)}`);
});

test("an enforced node without an unconditional budget is refused; Watch may have none", () => {
  const base: GraphDoc = { version: 1, nodes: { a: { ingress: true, budgets: [{ id: "k", count: 5, timeMs: 1000, scopeBy: "payload.k" }], egress: "q" } }, paths: [{ name: "p", nodes: ["a"] }] };
  assert.ok(graphValidator.validate(base).some((p) => p.at === "/nodes/a/budgets"));
  assert.deepEqual(graphValidator.validate({ ...base, nodes: { a: { ingress: true, budgets: [], egress: "q" } }, watch: { durationSeconds: 120 } }), []);
  assert.ok(graphValidator.validate({ ...base, watch: { durationSeconds: 119 } }).some((p) => p.at === "/watch/durationSeconds"));
});

test("every wizard template, and Watch, makes a document the schema accepts", () => {
  for (const t of Object.keys(templates) as (keyof typeof templates)[]) {
    const d = wizardDoc({ application: "shop", name: "mail", ingressQueue: "", partitions: null, egressQueue: "shop.mail.out", egressGroup: "mailers", mode: "enforce", watchSeconds: 0, budgets: templates[t].budgets });
    assert.deepEqual(graphValidator.validate(d), [], t);
    for (const b of d.nodes.limit.budgets!) assert.equal(b.confidence, "assumed", `${t}: amounts are marked assumed`);
    if (t === "per-account" || t === "per-operation") assert.ok(d.nodes.limit.budgets!.some((b) => !b.scopeBy && !b.whenOp), `${t} keeps a global ceiling`);
  }
  const w = wizardDoc({ application: "shop", name: "mail", ingressQueue: "", partitions: null, egressQueue: "shop.mail.out", egressGroup: "", mode: "watch", watchSeconds: 86400, budgets: [] });
  assert.deepEqual(graphValidator.validate(w), []);
  assert.deepEqual(w.watch, { durationSeconds: 86400 });
});

test("clone resets name, version and the Watch timer, takes Gate-owned ingress, blanks outgoing queues, keeps shared keys", () => {
  const src = JSON.parse(readFileSync(golden + "airbnb.in.json", "utf8")) as GraphDoc;
  src.watch = { durationSeconds: 600, startedAt: 1700000000000 };
  const { doc, sharedKeys, egressNodes } = cloneDoc(src, "airbnb-2");
  assert.equal(doc.graph, "airbnb-2");
  assert.equal(doc.version, 1);
  assert.deepEqual(doc.watch, { durationSeconds: 600 });
  assert.equal(doc.nodes.photos.ingress, true);
  assert.deepEqual(doc.nodes.ip.egress, { queue: "", group: "channel-workers" });
  assert.deepEqual(sharedKeys, ["egress-ip"]);
  assert.deepEqual(egressNodes, ["ip"]);
  assert.ok(graphValidator.validate(doc).some((p) => p.at.startsWith("/nodes/ip/egress")), "a blank outgoing queue must be refused until named");
});

test("limits per key read and write one \"value = count\" per line, and a bad line is named", async () => {
  const { keysText, parseKeys } = await import("../../src/lib/doc");
  const keys = { "key-free": 12, "a=b": 5, "key-enterprise": 600 };
  const text = keysText(keys);
  assert.equal(text, "a=b = 5\nkey-enterprise = 600\nkey-free = 12");
  assert.deepEqual(parseKeys(text), { keys, bad: null });
  assert.deepEqual(parseKeys("\n  acct-42 = 500  \n\n"), { keys: { "acct-42": 500 }, bad: null });
  assert.deepEqual(parseKeys(""), { keys: null, bad: null });
  assert.deepEqual(parseKeys("acct-42 = 500\nacct-9 500"), { keys: null, bad: 2 });
  assert.deepEqual(parseKeys("x = 1.5"), { keys: null, bad: 1 });
  assert.equal(keysText(null), "");
});
