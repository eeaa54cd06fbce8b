// A diagnostics finding says when it was first seen: the stamp with its time
// zone and the age once, measured against the server's time of the check.
import "./support/dom";
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement as h } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { FindingCard } from "../../src/pages/insight";
import type { Finding } from "../../src/wire";

// A check the server made just now, about a finding it first saw three minutes before.
const at = Date.now();
const finding: Finding = { kind: "backlog", node: "call", path: "a/b", title: "Items wait at node call", action: "look at the ceiling of call", severity: "warn", since: at - 3 * 60_000, budget: null };

const firstSeen = (html: string) => {
  const m = /first seen (.*?)<\/div>/.exec(html.replace(/<\/?time[^>]*>/g, ""));
  assert.ok(m, `no "first seen" in ${html}`);
  return m[1];
};

test("a finding first seen three minutes before the check shows that age once", () => {
  const text = firstSeen(renderToStaticMarkup(h("ul", null, h(FindingCard, { app: "shop", graph: "orders", f: finding, at }))));
  assert.equal(text.match(/\(/g)?.length, 1, `the age is shown more than once in "${text}"`);
  assert.match(text, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \(3 min ago\)$/);
});

test("the age is counted from the server's check, not the browser's clock", () => {
  const old: Finding = { ...finding, since: at - 3 * 60_000 - 3_600_000 };
  const text = firstSeen(renderToStaticMarkup(h("ul", null, h(FindingCard, { app: "shop", graph: "orders", f: old, at: at - 3_600_000 }))));
  assert.match(text, /\(3 min ago\)$/);
});

test("the finding names its node as a link and its path", () => {
  const html = renderToStaticMarkup(h("ul", null, h(FindingCard, { app: "shop", graph: "orders", f: finding, at })));
  assert.match(html, /data-kind="backlog"/);
  assert.match(html, new RegExp(`<time dateTime="${new Date(finding.since).toISOString()}">`));
  assert.match(html, /<a href="[^"]*node=call"[^>]*>node call<\/a> · path a\/b · first seen/);
});
