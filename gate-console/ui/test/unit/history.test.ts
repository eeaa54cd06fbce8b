// The History tab for each answer of the versions route: the server's 503
// no-history (a console without PostgreSQL) reads "History is off" and says
// what to configure; any other failure stays an error; a page lists its
// revisions.
import "./support/dom";
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement as h } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import type { GraphVersionPage } from "../../src/wire";
import { ApiError, type Loaded } from "../../src/lib/api";
import { HistoryView } from "../../src/pages/history";

const render = (page: Omit<Loaded<GraphVersionPage>, "reload">) =>
  renderToStaticMarkup(h(HistoryView, { app: "shop", graph: "pay", page: { ...page, reload: () => {} }, cursor: "", setCursor: () => {} }));

// gate-api's answer without PostgreSQL (gate-api/internal/declare historyGraph).
const noHistory = "no change history: gate-api runs without PostgreSQL, so no version of 'shop/pay' was recorded; set PG_HOST (or PG_URL) to keep every stored version with who changed it and when";

test("the server's 503 no-history reads 'History is off' and names PG_HOST", () => {
  const html = render({ data: null, loading: false, error: new ApiError(503, noHistory, { error: noHistory, code: "no-history" }) });
  assert.match(html, /data-testid="history-off"/);
  assert.match(html, /History is off/);
  assert.match(html, /PG_HOST unset/);
  assert.doesNotMatch(html, /role="alert"/);
});

test("another failure is an error, never 'history is off'", () => {
  for (const e of [new ApiError(502, "the history database failed", { error: "the history database failed", code: "history-failed" }), new ApiError(503, "not running", { error: "not running", code: "not-running" }), new ApiError(0, "network", null)]) {
    const html = render({ data: null, loading: false, error: e });
    assert.doesNotMatch(html, /History is off/, `status ${e.status}`);
    assert.match(html, /data-testid="error-state"/, `status ${e.status}`);
  }
});

test("with history, the tab lists each revision with who and when", () => {
  const html = render({ loading: false, error: null, data: { total: 1, next: null, items: [{ application: "shop", graph: "pay", revision: 1, at: Date.UTC(2026, 11, 2, 9, 0, 0), changedBy: "ann@example.com", via: "console", action: "declare", version: 1, etag: "\"a\"", restoredFrom: null, summary: "created", current: true }] } });
  assert.doesNotMatch(html, /History is off/);
  assert.match(html, /data-testid="history-table"/);
  assert.match(html, /ann@example\.com/);
  assert.match(html, /1 revision,/);
});
