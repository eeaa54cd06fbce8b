// The web app's response types. Everything gate-api and gate-console answer
// with comes from wire.gen.ts, generated from Go's libs/wire
// (`go run ./libs/wire/cmd/tsgen`); the names below are aliases of those.
// No shape is written here by hand: a shape the app needs that is missing
// belongs in libs/wire.
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

/** Every refusal's body (a declare refusal carries rules and problems with JSON pointers). */
export type ErrorBody = G.Error;
