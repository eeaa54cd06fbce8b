// Live stage counters: the /api/live server-sent events when the stream is
// up, else polling the graph view. The Live/Paused control stops both.
import { useEffect, useRef, useState } from "react";
import type { LiveSnapshot, StageCounters } from "../wire.gen";

export type LiveState = "live" | "paused" | "polling";
export const stageKey = (s: { path: string; node: string; hop: number }) => `${s.path}|${s.node}|${s.hop}`;

/**
 * Subscribes to /api/live for one graph while enabled. Replicas report
 * separately; the counters shown are the sum of every replica's latest
 * snapshot. Returns the merged counters per stage and the stream's state.
 */
export function useLiveCounters(app: string, graph: string, enabled: boolean) {
  const [stages, setStages] = useState<Record<string, StageCounters>>({});
  const [state, setState] = useState<LiveState>(enabled ? "live" : "paused");
  const [at, setAt] = useState<number | null>(null);
  const byReplica = useRef<Record<string, Record<string, StageCounters>>>({});
  useEffect(() => {
    if (!enabled) { setState("paused"); return; }
    const url = `/api/live?application=${encodeURIComponent(app)}&graph=${encodeURIComponent(graph)}`;
    const es = new EventSource(url);
    let frame = 0;
    setState("live");
    const onMsg = (ev: MessageEvent<string>) => {
      let snap: LiveSnapshot;
      try { snap = JSON.parse(ev.data) as LiveSnapshot; } catch { return; }
      if (!snap.graph || snap.graph.application !== app || snap.graph.graph !== graph) return;
      const m: Record<string, StageCounters> = {};
      for (const s of snap.graph.stages ?? []) m[stageKey(s)] = s.counters;
      byReplica.current[snap.replica] = m;
      if (!frame) frame = requestAnimationFrame(() => {
        frame = 0;
        const sum: Record<string, StageCounters> = {};
        for (const rep of Object.values(byReplica.current)) for (const [k, c] of Object.entries(rep)) sum[k] = sum[k] ? add(sum[k], c) : { ...c };
        setStages(sum);
        setAt(Date.now());
      });
    };
    es.addEventListener("message", onMsg);
    es.addEventListener("counters", onMsg as EventListener);
    es.onerror = () => { if (es.readyState === EventSource.CLOSED) setState("polling"); else setState("polling"); };
    es.onopen = () => setState("live");
    return () => { es.close(); if (frame) cancelAnimationFrame(frame); };
  }, [app, graph, enabled]);
  return { stages, state, at };
}

function add(a: StageCounters, b: StageCounters): StageCounters {
  const out = { ...a };
  for (const k of Object.keys(b) as (keyof StageCounters)[]) out[k] = (a[k] ?? 0) + (b[k] ?? 0);
  return out;
}
