// The AI agent's conversation and review draft: kept in this module's
// memory only, so they survive navigating the console (and closing the
// panel) and are gone on refresh or sign-out. Nothing is written to
// storage.
import { useSyncExternalStore } from "react";
import type { AIMessage } from "../wire";
import type { GraphDoc } from "./doc";

export interface Turn extends AIMessage {
  assumptions?: string[];
  warnings?: string[];
  draft?: GraphDoc | null;
  failed?: boolean;
}

export interface AgentState {
  open: boolean;
  application: string;
  turns: Turn[];
  draft: GraphDoc | null;
  pending: boolean;
}

const empty: AgentState = { open: false, application: "", turns: [], draft: null, pending: false };
let state: AgentState = empty;
const listeners = new Set<() => void>();

export function setAgent(patch: Partial<AgentState> | ((s: AgentState) => Partial<AgentState>)) {
  state = { ...state, ...(typeof patch === "function" ? patch(state) : patch) };
  listeners.forEach((l) => l());
}

export function clearAgent() { state = empty; listeners.forEach((l) => l()); }

export function openAgent(application?: string) {
  setAgent((s) => ({ open: true, application: application ?? s.application }));
}

export function useAgent(): AgentState {
  return useSyncExternalStore((l) => { listeners.add(l); return () => { listeners.delete(l); }; }, () => state);
}

/** The draft the editor opens with /graphs/new?from=ai. */
export function reviewDraft(): GraphDoc | null { return state.draft; }
