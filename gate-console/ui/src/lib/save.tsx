// Every save goes through the server's dry run first: the user sees what
// the change does (the diff) and what Gate warns about, and confirms. The
// write then carries a precondition (RFC 9110): a create sends
// If-None-Match: * (create means create: an existing name is refused, never
// replaced), an edit sends If-Match with the ETag of what it compared
// against (someone else's change in between is refused, never overwritten).
import { useEffect, useRef, useState } from "react";
import type { Declared, DryRun, ErrorBody, Resolved } from "../wire";
import { api, ApiError, type Pre } from "./api";
import { DiffView, Warnings } from "./diffview";
import { graphHref } from "./router";
import { Link, when } from "./ui";

export type SaveStage =
  | { kind: "idle" }
  | { kind: "checking" }
  | { kind: "review"; dry: DryRun; pre: Pre; overtaken: ErrorBody | null }
  | { kind: "saving"; dry: DryRun; pre: Pre; overtaken: ErrorBody | null }
  | { kind: "exists"; app: string; graph: string; body: ErrorBody | null }
  | { kind: "failed"; error: ApiError };

export interface SaveTarget {
  app: string;
  graph: string;
  doc: unknown;
  /** A create (wizard, New graph, Clone, the AI's draft): If-None-Match: *. */
  create: boolean;
  /** An edit: the ETag of the document the editor opened. */
  etag: string | null;
}

/** The save flow of one editor: check (dry run) → review → confirm (the write). */
export function useSaveFlow(onSaved: (res: Declared, dry: DryRun) => void, onRefused?: (e: ApiError) => void) {
  const [stage, setStage] = useState<SaveStage>({ kind: "idle" });
  const target = useRef<SaveTarget | null>(null);

  const overtaken = async (t: SaveTarget, body: ErrorBody | null) => {
    // Someone else stored another document since this editor opened it:
    // show what this save would change against *their* version.
    try {
      const dry = await api.dryRun(t.app, t.graph, t.doc, null);
      setStage({ kind: "review", dry, pre: dry.storedEtag ? { ifMatch: dry.storedEtag } : { ifNoneMatch: "*" }, overtaken: body ?? { error: "changed meanwhile", code: "precondition-failed" } });
    } catch (e) {
      fail(e);
    }
  };
  const fail = (e: unknown) => {
    const ae = e instanceof ApiError ? e : new ApiError(0, String(e), null);
    setStage({ kind: "failed", error: ae });
    onRefused?.(ae);
  };

  // A refused dry run or save: a precondition failure (412) means the name
  // is taken (a create) or someone saved first (an edit); anything else fails.
  const refused = async (t: SaveTarget, e: unknown) => {
    if (e instanceof ApiError && e.status === 412) {
      if (t.create) setStage({ kind: "exists", app: t.app, graph: t.graph, body: e.body });
      else await overtaken(t, e.body);
      return;
    }
    fail(e);
  };

  const check = async (t: SaveTarget) => {
    target.current = t;
    setStage({ kind: "checking" });
    const pre: Pre = t.create ? { ifNoneMatch: "*" } : t.etag ? { ifMatch: t.etag } : null;
    try {
      const dry = await api.dryRun(t.app, t.graph, t.doc, pre);
      setStage({ kind: "review", dry, pre: t.create ? { ifNoneMatch: "*" } : dry.storedEtag ? { ifMatch: dry.storedEtag } : { ifNoneMatch: "*" }, overtaken: null });
    } catch (e) {
      await refused(t, e);
    }
  };

  const confirm = async () => {
    const t = target.current;
    if (!t || stage.kind !== "review") return;
    const { dry, pre } = stage;
    setStage({ ...stage, kind: "saving" });
    try {
      const res = await api.declare(t.app, t.graph, t.doc, pre);
      setStage({ kind: "idle" });
      onSaved(res, dry);
    } catch (e) {
      await refused(t, e);
    }
  };

  const cancel = () => setStage({ kind: "idle" });
  return { stage, check, confirm, cancel, busy: stage.kind === "checking" || stage.kind === "saving" };
}

/**
 * A dry run of the draft while it is edited (no preconditions, debounced):
 * what the server will enforce, for the form's hints. Errors are ignored
 * here: the save reports them.
 */
export function usePreview(enabled: boolean, app: string, graph: string, doc: unknown, delayMs = 700): Resolved | null {
  const [resolved, setResolved] = useState<Resolved | null>(null);
  const text = JSON.stringify(doc);
  useEffect(() => {
    if (!enabled || !graph) return;
    let live = true;
    const t = window.setTimeout(() => {
      api.dryRun(app, graph, JSON.parse(text), null).then((d) => { if (live) setResolved(d.resolved); }, () => { /* shown on save */ });
    }, delayMs);
    return () => { live = false; window.clearTimeout(t); };
  }, [enabled, app, graph, text, delayMs]);
  return resolved;
}

/** Who stored the document a 412 found, and when, in the server's terms. */
export function storedBy(b: ErrorBody | null): string {
  if (!b) return "";
  const parts = [];
  if (b.storedVersion !== undefined && b.storedVersion !== null) parts.push(`version ${b.storedVersion}`);
  if (b.changedBy) parts.push(`stored by ${b.changedBy}`);
  if (b.changedAt) parts.push(when(b.changedAt));
  return parts.join(", ");
}

/** The review (diff, warnings, Confirm) or the refusal that stopped it, shown by the save button. */
export function SavePanel({ flow, verb }: { flow: ReturnType<typeof useSaveFlow>; verb: string }) {
  const { stage } = flow;
  const box = useRef<HTMLDivElement | null>(null);
  // The review (or the refusal) takes the focus once, where the user looks: by the button.
  useEffect(() => { if (stage.kind === "review" || stage.kind === "exists") { box.current?.scrollIntoView({ block: "nearest" }); box.current?.focus(); } }, [stage.kind]);
  if (stage.kind === "exists") {
    const by = storedBy(stage.body);
    return (
      <div className="notice bad" role="alert" data-testid="name-exists" tabIndex={-1} ref={box}>
        <strong>{stage.app}/{stage.graph} exists already</strong>{by ? <> ({by})</> : null}. Nothing was stored: a create never replaces a graph.{" "}
        <Link to={graphHref(stage.app, stage.graph)}>Open {stage.app}/{stage.graph}</Link>, or choose another name.
      </div>
    );
  }
  if (stage.kind !== "review" && stage.kind !== "saving") return null;
  const { dry, overtaken } = stage;
  return (
    <div className="card review" role="region" aria-label="Review the change" data-testid="review" tabIndex={-1} ref={box}>
      {overtaken ? (
        <div className="notice bad" role="alert" data-testid="overtaken">
          <strong>Someone else changed {dry.application}/{dry.graph} since you opened it</strong>{storedBy(overtaken) ? <>: {storedBy(overtaken)}</> : null}.
          Nothing was stored. Below is what your save would change against <em>their</em> version; confirm only if you mean to replace it.
        </div>
      ) : null}
      <h3>Review before {verb.toLowerCase()}</h3>
      <p className="small muted">The server's dry run: every check a save runs, nothing stored yet.</p>
      <DiffView diff={dry.diff} />
      <Warnings warnings={dry.warnings} testid="review-warnings" />
      <div className="row">
        <button type="button" className="primary" onClick={flow.confirm} disabled={stage.kind === "saving"} data-testid="confirm-save">
          {stage.kind === "saving" ? "Saving…" : overtaken ? `${verb} over their change` : `Confirm: ${verb.toLowerCase()}`}
        </button>
        <button type="button" onClick={flow.cancel} disabled={stage.kind === "saving"} data-testid="cancel-review">Back to editing</button>
      </div>
    </div>
  );
}

// Warnings stay visible after saving: the graph's pages show the last
// save's warnings (kept per tab) until the user dismisses them.
export interface SavedNote { at: number; version: number; warnings: string[]; running: boolean; runningNote?: string; endedWatch?: boolean }
const savedKey = (app: string, graph: string) => `gate-saved:${app}/${graph}`;

export function keepSaved(app: string, graph: string, res: Declared) {
  try {
    sessionStorage.setItem(savedKey(app, graph), JSON.stringify({ at: Date.now(), version: res.version, warnings: res.warnings ?? [], running: res.running, runningNote: res.runningNote, endedWatch: res.diff?.mode?.from === "watch" } satisfies SavedNote));
  } catch { /* storage refused: the note is lost, the save is not */ }
}

export function readSaved(app: string, graph: string): SavedNote | null {
  try {
    const raw = sessionStorage.getItem(savedKey(app, graph));
    if (!raw) return null;
    const n = JSON.parse(raw) as SavedNote;
    return n && typeof n.at === "number" && Array.isArray(n.warnings) ? n : null;
  } catch { return null; }
}

export function dropSaved(app: string, graph: string) {
  try { sessionStorage.removeItem(savedKey(app, graph)); } catch { /* nothing kept */ }
}
