// Chart markers: however close, no two labels overlap, and a folded
// cluster still names every event it holds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { layoutMarkers, ROW_PX, type PlacedMarker } from "../../src/lib/markers";

type M = { t: number; label: string };
const left = 48, right = 648;
// A one-hour plot 600 px wide, as the insight charts draw it.
const x = (m: M) => left + (m.t / 3600000) * (right - left);

function assertNoOverlap(placed: PlacedMarker<M>[]) {
  for (let i = 0; i < placed.length; i++) {
    for (let j = i + 1; j < placed.length; j++) {
      const a = placed[i], b = placed[j];
      const apart = a.row !== b.row || a.x1 <= b.x0 || b.x1 <= a.x0;
      assert.ok(apart, `labels overlap: "${a.label}" [${a.x0}, ${a.x1}) and "${b.label}" [${b.x0}, ${b.x1}) both in row ${a.row}`);
    }
  }
}
const members = (placed: PlacedMarker<M>[]) => placed.flatMap((p) => p.items).map((m) => m.label).sort();

for (const n of [1, 2, 3, 4, 10, 500]) {
  test(`${n} markers at the same instant: no overlap, every one listed`, () => {
    const ms = Array.from({ length: n }, (_, i) => ({ t: 1800000, label: `Backoff applied on node n${i}` }));
    const placed = layoutMarkers(ms, x, left, right);
    assertNoOverlap(placed);
    assert.deepEqual(members(placed), ms.map((m) => m.label).sort());
    assert.equal(placed.length, 1);
    assert.equal(placed[0].label, n === 1 ? "Backoff applied on node n0" : `${n} events`);
  });
  test(`${n} markers 1 px apart: no overlap, every one listed`, () => {
    const ms = Array.from({ length: n }, (_, i) => ({ t: 300000 + i * 6000, label: `Version ${i + 1} stored` })); // 6 s = 1 px
    const placed = layoutMarkers(ms, x, left, right);
    assertNoOverlap(placed);
    assert.deepEqual(members(placed), ms.map((m) => m.label).sort());
  });
}

test("markers spread over the whole plot, at every spacing, never overlap and stay in few rows", () => {
  for (const spacing of [1, 3, 7, 20, 45, 90, 150]) {
    const ms = Array.from({ length: Math.floor(600 / spacing) }, (_, i) => ({ t: (i * spacing * 3600000) / 600, label: i % 2 ? "Budget global of node limit: observed" : "v2" }));
    const placed = layoutMarkers(ms, x, left, right);
    assertNoOverlap(placed);
    assert.equal(placed.flatMap((p) => p.items).length, ms.length);
    // The chart's 148 px plot holds 12 rows.
    assert.ok(Math.max(...placed.map((p) => p.row)) * ROW_PX < 148, `spacing ${spacing}: ${Math.max(...placed.map((p) => p.row)) + 1} rows`);
  }
});

test("markers far apart keep their own labels in one row; labels stay inside the plot", () => {
  const ms = [{ t: 0, label: "v1" }, { t: 1800000, label: "v2" }, { t: 3600000, label: "v3" }];
  const placed = layoutMarkers(ms, x, left, right);
  assert.deepEqual(placed.map((p) => [p.label, p.row]), [["v1", 0], ["v2", 0], ["v3", 0]]);
  for (const p of placed) assert.ok(p.x0 >= left && p.x1 <= right, `${p.label} leaves the plot`);
});
