// Chart marker layout (pure, no DOM): markers closer than their label's
// width fold into one cluster that shows the count and lists its members
// on hover and focus; cluster labels then take the first row where they
// overlap no other label, in as many rows as needed. No two label boxes
// overlap at any density.

/** The width of one character of a marker label (11 px sans-serif, generous). */
export const CHAR_PX = 6.6;
/** A label row's height in px. */
export const ROW_PX = 12;
/** Labels longer than this are cut (with "…"); the full text is in the hover list. */
export const MAX_LABEL_CHARS = 28;

export interface PlacedMarker<M> {
  /** Where the marker's line is drawn: the first member's x. */
  x: number;
  /** The members, in time order (one for a lone marker). */
  items: M[];
  /** What the label reads: the marker's own label, or "N events". */
  label: string;
  /** The label's box, in px: [x0, x1) horizontally, row from the top. */
  x0: number;
  x1: number;
  row: number;
  /** The label is drawn leftwards of the line (markers in the right half). */
  leftwards: boolean;
}

export function labelWidth(label: string) {
  return label.length * CHAR_PX + 4;
}

function shortLabel(label: string) {
  return label.length > MAX_LABEL_CHARS ? label.slice(0, MAX_LABEL_CHARS - 1) + "…" : label;
}

/**
 * Lays out markers at pixel positions xOf(m) in a plot from left to right:
 * a label in the left half runs rightwards from its line, in the right half
 * leftwards, so it stays inside the plot.
 */
export function layoutMarkers<M extends { t: number; label: string }>(markers: M[], xOf: (m: M) => number, left: number, right: number): PlacedMarker<M>[] {
  const sorted = [...markers].sort((a, b) => a.t - b.t);
  // Fold: a marker closer to a cluster's line than that cluster's label is
  // wide joins it. The label of a cluster of n reads "n events", so the
  // width judged is the wider of its member's label and that.
  const clusters: { x: number; items: M[] }[] = [];
  for (const m of sorted) {
    const x = xOf(m);
    const c = clusters[clusters.length - 1];
    if (c) {
      const w = Math.max(labelWidth(shortLabel(c.items[0].label)), labelWidth(`${c.items.length + 1} events`));
      if (x - c.x < w) { c.items.push(m); continue; }
    }
    clusters.push({ x, items: [m] });
  }
  const mid = (left + right) / 2;
  const rows: [number, number][][] = [];
  return clusters.map((c) => {
    const label = c.items.length === 1 ? shortLabel(c.items[0].label) : `${c.items.length} events`;
    const w = labelWidth(label);
    const leftwards = c.x > mid;
    const x0 = leftwards ? c.x - w : c.x, x1 = leftwards ? c.x : c.x + w;
    let row = rows.findIndex((r) => r.every(([a, b]) => x1 <= a || x0 >= b));
    if (row < 0) { row = rows.length; rows.push([]); }
    rows[row].push([x0, x1]);
    return { x: c.x, items: c.items, label, x0, x1, row, leftwards };
  });
}
