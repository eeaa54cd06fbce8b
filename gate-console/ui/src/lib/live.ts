// Live stage counters from /api/live (server-sent events: a "status" event
// says whether the console streams or wants polling; "counters" events
// carry one graph's stages summed over the relay replicas). The Live/Paused
// control closes the stream; when the console says "poll" — NATS is gone,
// or the graph went quiet: no relay published its counters lately — or the
// stream breaks, or the page itself hears no counters for longer than the
// console's quiet period, the page polls the graph view instead, so a
// relay that stopped never leaves its last numbers on screen as live.
import { useEffect, useState } from "react";
import type { LiveCounters, LiveStatus, StageCounters } from "../wire";

export type LiveState = "connecting" | "live" | "paused" | "polling";
export const stageKey = (s: { path: string; node: string; hop: number }) => `${s.path}|${s.node}|${s.hop}`;

// watchdogSlackMs is how much longer than the console's quiet period the
// page waits for counters before it stops trusting a stream that says
// "stream" (a proxy that holds events back, a connection gone silent).
export const watchdogSlackMs = 5000;

// quietFor is the decision the page makes once a second: how long (ms) it
// has heard no counters while the console says "stream", when that is past
// the console's quiet period plus the slack; null when the stream is to be
// trusted.
export function quietFor(serverMode: string, lastCountersAt: number, quietMs: number, now: number): number | null {
  if (serverMode !== "stream" || quietMs <= 0) return null;
  const silent = now - lastCountersAt;
  return silent > quietMs + watchdogSlackMs ? silent : null;
}

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
    let serverMode = "";
    let quietMs = 0;
    let heard = Date.now();
    let watchdogQuiet = false;
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
        serverMode = st.mode; quietMs = st.quiet_ms ?? 0; heard = Date.now(); watchdogQuiet = false;
        setState(st.mode === "stream" ? "live" : "polling"); setReason(st.reason);
        // Counters from before a silence are a stopped relay's: never shown as live again.
        if (st.mode !== "stream") { pending = null; setStages({}); setAt(null); }
      } catch { /* a malformed status changes nothing */ }
    });
    es.addEventListener("counters", (ev) => {
      try {
        const c = JSON.parse((ev as MessageEvent<string>).data) as LiveCounters;
        if (c.application !== app || c.graph !== graph) return;
        heard = Date.now();
        if (watchdogQuiet && serverMode === "stream") { watchdogQuiet = false; setState("live"); setReason(""); }
        pending = c; // coalesce to one render per frame
        if (!frame) frame = requestAnimationFrame(flush);
      } catch { /* ignore */ }
    });
    const watchdog = setInterval(() => {
      const silent = quietFor(serverMode, heard, quietMs, Date.now());
      if (silent !== null && !watchdogQuiet) {
        watchdogQuiet = true;
        setState("polling"); setReason(`no counters arrived for ${Math.round(silent / 1000)} s although the stream is open`);
        pending = null; setStages({}); setAt(null);
      }
    }, 1000);
    es.onerror = () => { serverMode = ""; setState("polling"); setReason("the live stream is reconnecting"); };
    return () => { es.close(); clearInterval(watchdog); if (frame) cancelAnimationFrame(frame); };
  }, [app, graph, enabled]);
  return { stages, state, at, reason };
}
