// The web app's response types. Everything gate-api and gate-console answer
// with comes from wire.gen.ts, generated from Go's libs/wire
// (`go run ./libs/wire/cmd/tsgen`); the names below are aliases of those.
// The few shapes after "Not yet in libs/wire" belong to routes other builds
// add (history, insights: gate-runtime.md §4.3 traces/flow/rollups, §5.4,
// §6.1–6.3) and are written from the spec until their Go types land there.
import type * as G from "./wire.gen";

export type * from "./wire.gen";
export type QueenProbe = G.QueenState;
export type StageCounters = G.Counters;
export type GraphListNode = G.GraphRowNode;
export type PathView = G.ViewPath;
export type NodeView = G.ViewNode;
export type StageView = G.ViewStage;
export type BudgetView = G.ViewBudget;
export type BreachRow = G.Breach;
export type DeclareResponse = G.Declared;
export type BackoffResponse = G.Backoff;

/** A declare refusal adds the rules and the problems (JSON pointers) to the error body. */
export interface Problem { rule: string; message: string; at?: string }
export type ErrorBody = G.Error & { rules?: string[]; problems?: Problem[] };

// ---- Not yet in libs/wire ----
export interface Trace { at: number; application: string; target: string; lane: string; op: string | null; outcome: string; budget_id: string | null }
export interface FlowPoint { t: number; utilisation: number | null; target: string; admitted: number; ceiling: number | null; total_admitted: number }
export interface Flow { minutes: number[]; applications: { application: string; points: FlowPoint[] }[]; durable: boolean }
export interface WatchTraffic { admitted: number; cost: number; averageCostPerSecond: number | null; peakCostPerMinute: number | null; recordedMinutes: number }
export interface WatchSummary { startedAt: number; endsAt: number; ready: boolean; minutes: number; nodes: { node: string; traffic: WatchTraffic }[]; resolutionSeconds: number }
export interface DiagnosticFinding { kind: string; node: string | null; path: string | null; title: string; action: string; severity: "bad" | "warn" | "info"; since: number; budget?: string | null }
export interface Diagnostics { at: number; issues: DiagnosticFinding[]; durationScope: string }
export interface RollupLane { t: number; admitted: number; denied: number; calls: number; throttled: number; cost_estimated: number; cost_actual: number }
export interface RollupRow { t: number; total: RollupLane; lanes: Record<string, RollupLane> }
export interface SnapshotBody { available?: boolean; before?: number; workers?: number; oldestSeconds?: number | null; positions?: Record<string, number> | null; version?: number }
export interface Timeline {
  samples: { node: string; t: number; at: number; value: SnapshotBody }[];
  events: { at: number; change: { label: string; version: number; mode: "watch" | "enforce" } }[];
  relayed: Record<string, RollupRow[]>; enabled: boolean; resolutionSeconds: number;
}
export interface Simulation {
  items: number; delayedItems: number; delayedPercent: number | null; peakBacklog: number; remainingBacklog: number;
  drainSeconds: number; series: { t: number; backlog: number; peak: number }[];
  coverage: { since: number; until: number; gapSeconds: number; lostItems: number; resolutionSeconds: number };
  effective: { count: number; seconds: number; subWindows: number; costPerItem: number }; node: string; hasKnownGaps: boolean;
}
