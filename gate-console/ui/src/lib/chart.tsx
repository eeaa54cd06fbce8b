// A small SVG time-series chart: a missing value or a missing sample is a
// gap in the line, never a zero; annotations are vertical markers
// (laid out by markers.ts so that no two labels overlap).
import { useEffect, useRef, useState } from "react";
import { clock, fmt } from "./ui";
import { segments } from "./series";
import { layoutMarkers, ROW_PX } from "./markers";
export { segments };

export interface Series { name: string; color: string; points: { t: number; v: number | null }[] }
export interface Marker { t: number; label: string }

function useWidth<T extends HTMLElement>(): [React.RefObject<T | null>, number] {
  const ref = useRef<T>(null);
  const [w, setW] = useState(600);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver((es) => { const cw = Math.floor(es[0].contentRect.width); if (cw > 0) setW(cw); });
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, w];
}

export function TimeChart({ series, markers = [], from, to, stepMs, height = 180, unit = "", label }: {
  series: Series[]; markers?: Marker[]; from: number; to: number; stepMs: number; height?: number; unit?: string; label: string;
}) {
  const [ref, width] = useWidth<HTMLDivElement>();
  const pad = { l: 48, r: 10, t: 10, b: 22 };
  const iw = Math.max(10, width - pad.l - pad.r), ih = height - pad.t - pad.b;
  let max = 0;
  for (const s of series) for (const p of s.points) if (p.v !== null && p.v > max) max = p.v;
  if (max <= 0) max = 1;
  const nice = niceMax(max);
  const x = (t: number) => pad.l + ((t - from) / Math.max(1, to - from)) * iw;
  const y = (v: number) => pad.t + ih - (v / nice) * ih;
  const ticks = [0, nice / 2, nice];
  const xt = 4;
  const hasData = series.some((s) => s.points.some((p) => p.v !== null));
  // A range over 12 h crosses midnight: its ticks carry the date.
  const dated = to - from > 12 * 3600000;
  const tick = (t: number) => (dated ? `${new Date(t).toLocaleDateString("en-CA", { month: "2-digit", day: "2-digit" })} ${clock(t)}` : clock(t));
  const zone = new Intl.DateTimeFormat("en-US", { timeZoneName: "short" }).formatToParts(new Date(to)).find((p) => p.type === "timeZoneName")?.value ?? "";
  return (
    <div ref={ref} className="chart" role="figure" aria-label={label}>
      <svg width={width} height={height}>
        {ticks.map((v) => (
          <g key={v} className="axis">
            <line className="gridline" x1={pad.l} x2={pad.l + iw} y1={y(v)} y2={y(v)} />
            <text x={pad.l - 6} y={y(v) + 4} textAnchor="end">{fmt(v, 1)}{unit}</text>
          </g>
        ))}
        {Array.from({ length: xt + 1 }, (_, i) => from + ((to - from) * i) / xt).map((t, i) => (
          <g key={i} className="axis"><text x={x(t)} y={height - 6} textAnchor={i === 0 ? "start" : i === xt ? "end" : "middle"}>{tick(t)}</text></g>
        ))}
        {/* Markers closer than a label's width fold into one "N events" cluster
            whose hover and focus list them; labels take as many rows as needed. */}
        {layoutMarkers(markers.filter((m) => m.t >= from && m.t <= to), (m) => x(m.t), pad.l, pad.l + iw).map((c) => {
          const list = c.items.map((m) => `${tick(m.t)} ${zone} · ${m.label}`).join("\n");
          return (
            <g key={`${c.x}:${c.items[0].t}`} data-testid="chart-marker" data-count={c.items.length} tabIndex={0} className="chart-marker" aria-label={list}>
              <title>{list}</title>
              <line x1={c.x} x2={c.x} y1={pad.t} y2={pad.t + ih} stroke="var(--warn)" strokeDasharray="4 3" />
              <text x={c.leftwards ? c.x - 3 : c.x + 3} y={pad.t + 10 + c.row * ROW_PX} textAnchor={c.leftwards ? "end" : "start"} style={{ fill: "var(--warn)", fontSize: 11, fontWeight: c.items.length > 1 ? 600 : undefined }}>{c.label}</text>
            </g>
          );
        })}
        {series.map((s) => segments(s.points, stepMs).map((seg, i) => (
          seg.length === 1
            ? <circle key={s.name + i} cx={x(seg[0].t)} cy={y(seg[0].v)} r={3} fill={s.color} />
            : <polyline key={s.name + i} points={seg.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(" ")} fill="none" stroke={s.color} strokeWidth={1.8} />
        )))}
        {/* Hover values: each point names its time, series and value. */}
        {series.map((s) => s.points.filter((p) => p.v !== null && p.t >= from && p.t <= to).map((p) => (
          <circle key={`h${s.name}${p.t}`} className="hover-point" cx={x(p.t)} cy={y(p.v as number)} r={4} fill="transparent">
            <title>{`${tick(p.t)} ${zone} · ${s.name}: ${fmt(p.v, 1)}${unit}`}</title>
          </circle>
        )))}
        {!hasData ? <text x={pad.l + iw / 2} y={pad.t + ih / 2} textAnchor="middle" className="muted">no data in this range</text> : null}
      </svg>
      <div className="legend">{series.map((s) => <span key={s.name}><i style={{ background: s.color }} />{s.name}</span>)}<span className="muted small">times in {zone}{unit ? ` · values in ${unit.trim()}` : ""}</span></div>
    </div>
  );
}

function niceMax(v: number) {
  const e = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * e >= v) return m * e;
  return 10 * e;
}

