// The node page's "Cost estimates": the sentence read from the settle
// statistics, and a hint only where the estimates are far off.
import { test } from "node:test";
import assert from "node:assert/strict";
import { estimateQuality } from "../../src/lib/settle";

test("no settles says Gate never learns the actual cost", () => {
  const q = estimateQuality(null);
  assert.equal(q.tone, "none");
  assert.match(q.headline, /No settles/);
  assert.equal(estimateQuality({ settles: 0, estimated: 0, actual: 0, ratio: 0, until: 0 }).tone, "none");
});

test("estimates four times the cost read as 25% and hint at a closer estimate", () => {
  const q = estimateQuality({ settles: 973, estimated: 389200, actual: 97300, ratio: 0.25, until: 1 });
  assert.equal(q.tone, "over");
  assert.match(q.headline, /25% of their estimate/);
  assert.match(q.headline, /97,300 of 389,200 over 973 settles/);
  assert.match(q.hint ?? "", /give the difference back/);
});

test("low estimates warn of the debt later items wait for", () => {
  const q = estimateQuality({ settles: 10, estimated: 1000, actual: 1500, ratio: 1.5, until: 1 });
  assert.equal(q.tone, "under");
  assert.match(q.hint ?? "", /debt/);
});

test("close estimates carry no hint", () => {
  const q = estimateQuality({ settles: 10, estimated: 1000, actual: 950, ratio: 0.95, until: 1 });
  assert.equal(q.tone, "good");
  assert.equal(q.hint, null);
});
