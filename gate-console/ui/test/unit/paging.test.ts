// The lists page on the server: the query each page is asked with, the
// trail that makes Previous work, and the line that says what is shown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { back, current, firstPage, forward, listQueryString, rangeText } from "../../src/lib/paging";

test("a list query leaves out what is empty and encodes what is not", () => {
  assert.equal(listQueryString({}), "");
  assert.equal(listQueryString({ limit: 50, cursor: "", q: "  ", app: "", state: "" }), "?limit=50");
  assert.equal(listQueryString({ limit: 25, cursor: "YS9i", q: " shop/eu ", app: "channel", state: "stopped" }),
    "?limit=25&cursor=YS9i&q=shop%2Feu&app=channel&state=stopped");
});

test("Next pushes the server's cursor, Previous pops it, the first page stays put", () => {
  let t = firstPage;
  assert.equal(current(t), "");
  assert.deepEqual(back(t), [""]);
  t = forward(t, "c1");
  t = forward(t, "c2");
  assert.equal(current(t), "c2");
  assert.deepEqual(forward(t, null), t, "no next page: the trail does not move");
  t = back(t);
  assert.equal(current(t), "c1");
  t = back(back(t));
  assert.deepEqual(t, [""]);
});

test("the status line says which rows of how many are shown", () => {
  const noun: [string, string] = ["target", "targets"];
  assert.equal(rangeText(firstPage, 50, 7, 7, 7, noun), "1–7 of 7 targets");
  assert.equal(rangeText(["", "a"], 50, 50, 10000, 10000, noun), "51–100 of 10,000 targets");
  assert.equal(rangeText(["", "a", "b"], 20, 3, 43, 10000, noun), "41–43 of 43 matching · 10,000 targets");
  assert.equal(rangeText(firstPage, 50, 0, 0, 10000, noun), "No target matches · 10,000 targets");
  assert.equal(rangeText(firstPage, 50, 0, 0, 0, noun), "No targets yet");
  assert.equal(rangeText(firstPage, 50, 1, 1, 1, noun), "1–1 of 1 target");
});
