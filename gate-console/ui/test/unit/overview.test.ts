// The overview's Watch, ready-for-review and backoff counts: each is the
// server's figure and links to the Targets list filtered to those graphs;
// a count the server could not read says unknown, never 0.
import "./support/dom";
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement as h } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { ModeCounts } from "../../src/pages/overview";

const stat = (html: string, id: string) => {
  const m = new RegExp(`data-testid="${id}"[^>]*>(.*?)</div></div>`).exec(html);
  assert.ok(m, `no ${id} in ${html.slice(0, 400)}`);
  return m[1];
};

test("each count links to the Targets list filtered to those graphs", () => {
  const html = renderToStaticMarkup(h(ModeCounts, { o: { watching: 3, ready_for_review: 1, held: 2 } }));
  assert.match(stat(html, "stat-watch"), /<a href="\/targets\?state=watch" aria-label="3 graphs in Watch: list them">3<\/a>/);
  assert.match(stat(html, "stat-ready"), /<a href="\/targets\?state=ready" aria-label="1 graph ready for review: list them">1<\/a>/);
  assert.match(stat(html, "stat-held"), /<a href="\/targets\?state=held" aria-label="2 graphs held by a backoff: list them">2<\/a>/);
});

test("held the broker could not read is unknown, not 0; zero counts still link", () => {
  const html = renderToStaticMarkup(h(ModeCounts, { o: { watching: 0, ready_for_review: 0, held: null } }));
  assert.match(stat(html, "stat-held"), /data-testid="unknown"/);
  assert.doesNotMatch(stat(html, "stat-held"), /href=/);
  assert.match(stat(html, "stat-held"), /could not be read/);
  assert.match(stat(html, "stat-watch"), /href="\/targets\?state=watch"[^>]*>0<\/a>/);
});
