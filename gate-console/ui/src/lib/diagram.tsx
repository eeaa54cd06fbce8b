// The graph diagram: nodes in layers by their longest distance from an
// entry, edges from one hop to the next, each node showing its budgets,
// per-path shares and ceilings, shared keys and (live) stage counters.
import type { KeyboardEvent } from "react";
import type { GraphView, NodeView, StageCounters } from "../wire";
import { fmt, windowText } from "./ui";

const W = 300, GAPX = 70, GAPY = 22, PAD = 12;

export interface Layout { pos: Record<string, { x: number; y: number; h: number }>; width: number; height: number; edges: [string, string][] }

export function layout(view: Pick<GraphView, "nodes" | "paths">): Layout {
  const layer: Record<string, number> = {};
  const edges = new Map<string, [string, string]>();
  for (const n of view.nodes) layer[n.node] = 0;
  // Longest-path layering over the hops of every path (the graph is acyclic).
  for (let pass = 0; pass < view.nodes.length + 1; pass++) {
    let changed = false;
    for (const p of view.paths) {
      for (let i = 1; i < p.hops.length; i++) {
        const from = ([] as string[]).concat(p.hops[i - 1]), to = ([] as string[]).concat(p.hops[i]);
        for (const a of from) for (const b of to) {
          edges.set(`${a}>${b}`, [a, b]);
          if ((layer[b] ?? 0) < (layer[a] ?? 0) + 1) { layer[b] = (layer[a] ?? 0) + 1; changed = true; }
        }
      }
    }
    if (!changed) break;
  }
  const byLayer: string[][] = [];
  for (const n of view.nodes) (byLayer[layer[n.node]] ??= []).push(n.node);
  const heightOf = (name: string) => {
    const n = view.nodes.find((x) => x.node === name);
    // title, incoming, one line per budget and per path, the counters line, outgoing
    return 44 + 16 * ((n?.budgets.length ?? 0) + (n?.paths.length ?? 0) + 1) + 22;
  };
  const pos: Layout["pos"] = {};
  let height = 0;
  byLayer.forEach((names, li) => {
    let y = PAD;
    for (const name of names ?? []) {
      const h = heightOf(name);
      pos[name] = { x: PAD + li * (W + GAPX), y, h };
      y += h + GAPY;
    }
    height = Math.max(height, y);
  });
  return { pos, width: PAD * 2 + byLayer.length * W + (byLayer.length - 1) * GAPX, height: height + PAD, edges: [...edges.values()] };
}

function nodeLines(n: NodeView, counters?: StageCounters) {
  const lines: string[] = [];
  for (const b of n.budgets) {
    const tags = [b.scopeBy ? `per ${b.scopeBy.replace(/^payload\./, "")}` : "", b.sharedKey ? `shared "${b.sharedKey}"` : "", b.confidence === "assumed" ? "assumed" : ""].filter(Boolean).join(", ");
    lines.push(`${b.id}: ${windowText(b.count, b.timeMs)}${tags ? ` (${tags})` : ""}`);
  }
  for (const p of n.paths) {
    const ceil = n.budgets.filter((b) => !b.scopeBy).map((b) => b.ceilings[p]).filter((c) => c !== undefined);
    lines.push(`path ${p}: share ${fmt(n.shares[p] ?? 1, 2)}${ceil.length ? `, ceiling ${ceil.map((c) => fmt(c)).join("/")} per sub-window` : ""}`);
  }
  if (counters) lines.push(`forwarded ${fmt(counters.forwarded)} · commits ${fmt(counters.commits)}`);
  return lines;
}

export function Diagram({ view, selected, onSelect, counters }: {
  view: GraphView; selected: string; onSelect: (node: string) => void; counters: Record<string, StageCounters>;
}) {
  const L = layout(view);
  const key = (e: KeyboardEvent, node: string) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onSelect(node); } };
  return (
    <div className="diagram" data-testid="diagram">
      <svg width={L.width} height={L.height} role="group" aria-label={`diagram of ${view.graph}`}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" fill="var(--muted)" />
          </marker>
        </defs>
        {L.edges.map(([a, b]) => {
          const pa = L.pos[a], pb = L.pos[b];
          if (!pa || !pb) return null;
          const x1 = pa.x + W, y1 = pa.y + 24, x2 = pb.x, y2 = pb.y + 24, mx = (x1 + x2) / 2;
          return <path key={a + b} className="edge" d={`M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 2},${y2}`} markerEnd="url(#arrow)" />;
        })}
        {view.nodes.map((n) => {
          const p = L.pos[n.node];
          const held = n.breaker && n.breaker.until > Date.now();
          const lines = nodeLines(n, counters[n.node]);
          return (
            <g key={n.node} className={`node${selected === n.node ? " selected" : ""}${held ? " held" : ""}`} transform={`translate(${p.x},${p.y})`}
              tabIndex={0} role="button" aria-pressed={selected === n.node} data-node={n.node}
              onClick={() => onSelect(n.node)} onKeyDown={(e) => key(e, n.node)} style={{ cursor: "pointer" }}>
              <rect width={W} height={p.h} rx={8} />
              <text x={10} y={20} style={{ fontWeight: 700 }}>{n.node}{held ? " — backoff" : ""}</text>
              <text x={10} y={38} className="queue">{n.ingressQueue ? `in: ${n.ingressQueue}` : "interior"}</text>
              {lines.map((l, i) => <text key={i} x={10} y={58 + i * 16} style={{ fontSize: 11.5 }}>{l.length > 48 ? l.slice(0, 47) + "…" : l}<title>{l}</title></text>)}
              <text x={10} y={p.h - 10} className="queue">{n.egressQueue ? `out: ${n.egressQueue}${n.egressGroup ? ` (${n.egressGroup})` : ""}` : ""}</text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
