// "Try a limit" against the vendor's meter: the server's comparison shown as
// it came (its sentence, the seconds and calls over the vendor's limit, each
// limit the vendor stated), marked when the replay would have gone over it.
import "./support/dom";
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement as h } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { VendorCheck, VendorSpans } from "../../src/pages/insight";
import type { VendorComparison } from "../../src/wire";

const span = { node: "call", budget: "rps", since: 0, until: 20000, ended: true, limit: 10, declared: 50, timeMs: 1000, headers: "x-ratelimit",
  sentence: "the vendor enforced 10 where 50 is declared, from 1970-01-01T00:00:00Z to 1970-01-01T00:00:20Z" };

test("a limit the replay sends over the vendor's is marked, with its seconds and calls", () => {
  const v: VendorComparison = { budgets: ["rps"], seconds: 30, exceededSeconds: 30, overSeconds: 30, overItems: 500, lowestLimit: 10, lowestTimeMs: 1000,
    spans: [span], sentence: "the vendor enforced less than declared for 30 of these 60 s (as low as 10 per 1 s); 50 per 1 s is above it for 30 s" };
  const html = renderToStaticMarkup(h(VendorCheck, { v }));
  assert.match(html, /data-testid="sim-vendor"[^>]*data-over="yes"/);
  assert.match(html, /class="notice warn"/);
  assert.match(html, /data-testid="sim-vendor-sentence">the vendor enforced less than declared for 30 of these 60 s/);
  assert.match(html, /500 calls over its limit/);
  assert.match(html, /as low as 10 per 1 s/);
  assert.match(html, /call · rps: the vendor enforced 10 where 50 is declared/);
});

test("a vendor that stated nothing below declared shows the sentence only", () => {
  const v: VendorComparison = { budgets: ["rps"], seconds: 0, exceededSeconds: 0, overSeconds: 0, overItems: 0, lowestLimit: null, lowestTimeMs: null,
    spans: [], sentence: "the vendor stated no limit below what is declared in these 60 s: nothing to check 50 per 1 s against" };
  const html = renderToStaticMarkup(h(VendorCheck, { v }));
  assert.match(html, /data-over="no"/);
  assert.doesNotMatch(html, /sim-vendor-over/);
  assert.doesNotMatch(html, /sim-vendor-spans/);
  assert.match(html, /nothing to check 50 per 1 s against/);
});

test("the timeline lists each limit the vendor stated, in the server's words", () => {
  const html = renderToStaticMarkup(h(VendorSpans, { spans: [span, { ...span, limit: 20, ended: false, until: 1, sentence: "the vendor enforces 20 where 50 is declared, since a (until b unless it says so again)" }] }));
  assert.match(html, /data-testid="vendor-spans"/);
  assert.match(html, /Budget rps of node call: the vendor enforced 10 where 50 is declared, from 1970-01-01T00:00:00Z to 1970-01-01T00:00:20Z<\/li>/);
  assert.match(html, /Budget rps of node call: the vendor enforces 20 where 50 is declared, since a \(until b unless it says so again\)<\/li>/);
});
