// INTERIM: written by hand from gate-runtime.md §3.3, §4.3, §5.4 and §6
// until the console branch's generator (Go libs/wire → TypeScript) lands
// here; the merge replaces this file with the generated one.

export interface ErrorBody { error: string; rule?: string; rules?: string[]; field?: string; problems?: Problem[] }
export interface Problem { rule: string; message: string; at?: string }

export interface QueenProbe { reachable: boolean; url: string; version: string | null }
export interface Overview {
  queen: QueenProbe; targets: number; graphs: number; admitted_total: number; denied_total: number;
  admitted_per_sec: number | null; budgets_assumed: number; budgets_stale: number;
}
export interface AppRow { application: string; targets: number; admitted: number; denied: number }
export interface TargetRow {
  application: string; name: string; version: number; graph: string; running: boolean;
  lanes: { name: string }[]; paths: { name: string }[]; budgets_total: number; assumed_budgets: number;
  worst_budget_id: string | null; worst_used: number | null; worst_cap: number | null;
  worst_period_seconds: number | null; worst_assumed: boolean | null; admitted: number; denied: number;
  state: "pacing" | "flowing"; backlog: number; at: number;
}
export interface GraphListNode {
  name: string; target: string; entry: boolean; consume: boolean; running: boolean; budgets: number;
  paths: string[]; shares: Record<string, number>; waiting_for_budget: number; admitted: number; denied: number;
}
export interface Edge { from: string; to: string }
export interface PathView { name: string; priority: number | null; share: number | null; hops: (string | string[])[] }
export interface GraphRow { application: string; name: string; version: number; nodes: GraphListNode[]; edges: Edge[]; paths: PathView[]; forwarded: number }

export interface BudgetView {
  id: string; key: string; scopeBy: string | null; sharedKey: string | null; count: number; timeMs: number;
  subWindows: number; countSub: number; windowSubSeconds: number; confidence: string | null;
  value: number | null; expiresAt: number | null; utilisation: number | null; ceilings: Record<string, number>;
}
export interface Breaker { at: number; retryAfterSeconds: number; until: number; by: string | null }
export interface NodeView {
  node: string; ingressQueue: string | null; ingressOwnedByGate: boolean; httpPush: boolean;
  egressQueue: string | null; egressGroup: string | null; paths: string[]; shares: Record<string, number>;
  budgets: BudgetView[]; breaker: Breaker | null; waiting_for_budget: number; waiting_for_workers: number;
}
export interface StageCounters {
  popped: number; admitted: number; deferred: number; parked: number; released: number; forwarded: number;
  commits: number; duplicates: number; foreign: number; deadlettered: number; leaked: number; wedged: number;
  costAdmitted: number;
}
export interface StageView {
  path: string; node: string; hop: number; share: number; source: string; group: string; batch: number;
  concurrency: number; lag: number | null; destinations: string[]; counters: StageCounters;
  lastRefusal: { budget: string; at: number } | null;
}
export interface GraphView {
  application: string; graph: string; name: string; version: number; running: boolean; persisted: boolean;
  namespace: string; counters: number | null; nodes: NodeView[]; stages: StageView[]; paths: PathView[];
  spec: unknown;
}
export interface Trace { at: number; application: string; target: string; lane: string; op: string | null; outcome: string; budget_id: string | null }
export interface BreachRow { at: number; application: string; target: string; graph: string; node: string; retryAfterSeconds: number; until: number; by: string | null }
export interface FlowPoint { t: number; utilisation: number | null; target: string; admitted: number; ceiling: number | null; total_admitted: number }
export interface Flow { minutes: number[]; applications: { application: string; points: FlowPoint[] }[]; durable: boolean }
export interface Me { actor: "dev" | "google" | "oidc" | "internal"; email: string | null; role: "admin" | "viewer"; expires_at: number | null; dev_bypass: boolean }
export interface Version { gate: string; queen: QueenProbe }

export interface ResolvedQueue { name: string; kind: string; ownedByGate: boolean; partitions: number }
export interface ResolvedNode {
  node: string; ingressQueue: string | null; httpPush: boolean; egressQueue: string | null; egressGroup: string | null;
  breakerKey: string; shares: Record<string, number>;
}
export interface DeclareResponse {
  ok: boolean; application: string; graph: string; version: number;
  resolved: { namespace: string; queues: ResolvedQueue[]; nodes: ResolvedNode[]; stages: unknown[]; counters: number | null };
  warnings: string[]; trust: string; migrated?: boolean; migration?: string[];
}
export interface BackoffResponse { ok: boolean; node: string; retryAfterSeconds: number; until: number; keys: string[]; refunded: number }

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
/** /api/live "status" event. */
export interface LiveStatus { mode: "stream" | "poll"; nats: boolean; reason: string; graphs: string[]; heartbeat_ms: number; poll_ms: number }
/** /api/live "counters" event: one graph's stages summed over the replicas. */
export interface LiveCounters { application: string; graph: string; at: number; replicas: string[]; version: number; running: boolean; stages: { path: string; node: string; hop: number; counters: StageCounters; lastRefusal: { budget: string; at: number } | null }[] }

// AI configuration agent (libs/wire/ai.go): GET /api/ai/status, POST /api/ai/chat.
export interface AIStatus { enabled: boolean; provider: "OpenAI" | "Gemini"; model: string; watchAvailable: boolean; setup?: string }
export interface AIMessage { role: "user" | "assistant"; content: string }
export interface AIChatRequest { application: string; messages: AIMessage[]; draft?: unknown }
export interface AIChatReply { message: string; assumptions: string[]; draft: unknown | null; warnings: string[] }
