// Series helpers shared by the charts (pure, no DOM).

/** Split into runs of present values with no missing step between them. */
export function segments(points: { t: number; v: number | null }[], stepMs: number) {
  const out: { t: number; v: number }[][] = [];
  let cur: { t: number; v: number }[] = [];
  let last = -Infinity;
  for (const p of [...points].sort((a, b) => a.t - b.t)) {
    if (p.v === null || p.t - last > stepMs * 1.5) { if (cur.length) out.push(cur); cur = []; }
    if (p.v !== null) { cur.push({ t: p.t, v: p.v }); last = p.t; } else last = -Infinity;
  }
  if (cur.length) out.push(cur);
  return out;
}
