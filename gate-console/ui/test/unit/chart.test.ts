// Traffic over time: a missing sample or a null value is a gap, never a zero.
import { test } from "node:test";
import assert from "node:assert/strict";
import { segments } from "../../src/lib/series";

test("a null value splits the line and is not drawn as zero", () => {
  const s = segments([{ t: 0, v: 1 }, { t: 60000, v: 2 }, { t: 120000, v: null }, { t: 180000, v: 4 }], 60000);
  assert.deepEqual(s, [[{ t: 0, v: 1 }, { t: 60000, v: 2 }], [{ t: 180000, v: 4 }]]);
});

test("a missing minute splits the line; unsorted input is ordered", () => {
  const s = segments([{ t: 240000, v: 5 }, { t: 0, v: 1 }, { t: 60000, v: 2 }, { t: 300000, v: 6 }], 60000);
  assert.deepEqual(s, [[{ t: 0, v: 1 }, { t: 60000, v: 2 }], [{ t: 240000, v: 5 }, { t: 300000, v: 6 }]]);
});

test("no values, no segments", () => {
  assert.deepEqual(segments([{ t: 0, v: null }], 60000), []);
});
