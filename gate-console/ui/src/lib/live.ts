// Live stage counters from /api/live (server-sent events: a "status" event
// says whether the console streams or wants polling; "counters" events
// carry one graph's stages summed over the relay replicas). The Live/Paused
// control closes the stream; when the console says "poll" or the stream
// breaks, the page polls the graph view instead.
import { useEffect, useState } from "react";
import type { LiveCounters, LiveStatus, StageCounters } from "../wire";

export type LiveState = "connecting" | "live" | "paused" | "polling";
export const stageKey = (s: { path: string; node: string; hop: number }) => `${s.path}|${s.node}|${s.hop}`;

export function useLiveCounters(app: string, graph: string, enabled: boolean) {
  const [stages, setStages] = useState<Record<string, StageCounters>>({});
  const [state, setState] = useState<LiveState>(enabled ? "connecting" : "paused");
  const [reason, setReason] = useState("");
  const [at, setAt] = useState<number | null>(null);
  useEffect(() => {
    if (!enabled) { setState("paused"); return; }
    setState("connecting");
    const es = new EventSource(`/api/live?graphs=${encodeURIComponent(`${app}/${graph}`)}`);
    let pending: LiveCounters | null = null;
    let frame = 0;
    const flush = () => {
      frame = 0;
      if (!pending) return;
      const m: Record<string, StageCounters> = {};
      for (const s of pending.stages) m[stageKey(s)] = s.counters;
      setStages(m); setAt(pending.at); pending = null;
    };
    es.addEventListener("status", (ev) => {
      try {
        const st = JSON.parse((ev as MessageEvent<string>).data) as LiveStatus;
        setState(st.mode === "stream" ? "live" : "polling"); setReason(st.reason);
      } catch { /* a malformed status changes nothing */ }
    });
    es.addEventListener("counters", (ev) => {
      try {
        const c = JSON.parse((ev as MessageEvent<string>).data) as LiveCounters;
        if (c.application !== app || c.graph !== graph) return;
        pending = c; // coalesce to one render per frame
        if (!frame) frame = requestAnimationFrame(flush);
      } catch { /* ignore */ }
    });
    es.onerror = () => { setState("polling"); setReason("the live stream is reconnecting"); };
    return () => { es.close(); if (frame) cancelAnimationFrame(frame); };
  }, [app, graph, enabled]);
  return { stages, state, at, reason };
}
