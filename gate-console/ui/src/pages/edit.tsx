// New graph, Edit and Clone: one draft, two views. The guided form and the
// JSON editor both read and write the same FormModel; switching views goes
// through formToDoc/docToForm, which are exact inverses.
import { useEffect, useMemo, useState } from "react";
import type { GraphView, Problem } from "../wire";
import { api, useLoad } from "../lib/api";
import { cloneDoc, docToForm, formToDoc, isV1, jsonEqual, type FormModel, type GraphDoc } from "../lib/doc";
import { dropDraft, dropNew, keepDraft, keepNew, readDraft, readNew } from "../lib/draft";
import { EnforcedContext, GraphForm, ProblemsContext } from "../lib/form";
import { graphHref, mayLeave, navigate, useLeaveGuard, useQueryParam } from "../lib/router";
import { graphValidator } from "../lib/schema";
import { reviewDraft } from "../lib/agent";
import { ErrorState, Loading, useCanWrite, when } from "../lib/ui";
import { keepSaved, SavePanel, usePreview, useSaveFlow } from "../lib/save";

const starter: GraphDoc = {
  application: "", graph: "", version: 1, counters: { windowSeconds: 60 },
  nodes: {
    entry: { ingress: true, budgets: [{ id: "global", count: 100, timeMs: 1000, confidence: "assumed" }] },
    out: { budgets: [{ id: "provider", count: 50, timeMs: 1000, confidence: "assumed" }], egress: { queue: "", group: "workers" } },
  },
  paths: [{ name: "main", nodes: ["entry", "out"] }],
};

export function EditPage({ app, graph, clone }: { app: string | null; graph: string | null; clone?: boolean }) {
  const existing = app !== null && graph !== null;
  const read = useLoad<{ view: GraphView; etag: string | null } | null>(() => (existing ? api.graphTagged(app!, graph!) : Promise.resolve(null)), [app, graph]);
  if (existing && read.loading && !read.data) return <Loading />;
  if (existing && !read.data) return <ErrorState error={read.error!} what="the graph" />;
  return <Editor key={`${app}/${graph}/${clone}`} view={read.data?.view ?? null} etag={read.data?.etag ?? null} clone={!!clone} />;
}

function Editor({ view, etag, clone }: { view: GraphView | null; etag: string | null; clone: boolean }) {
  const canWrite = useCanWrite();
  const [mode] = useQueryParam("mode", "");
  const [from] = useQueryParam("from", "");
  const fromAI = !view && from === "ai" && reviewDraft() !== null;
  const [viewKind, setViewKind] = useQueryParam("view", "form");
  const isNew = !view || clone;
  const title = clone ? `Clone ${view!.application}/${view!.graph}` : view ? `Edit ${view.application}/${view.graph}` : "New graph";
  const [cloneNote, setCloneNote] = useState<{ shared: string[]; egress: string[] } | null>(null);
  const [notes, setNotes] = useState<string[]>([]);
  // An existing graph's unsaved draft is kept per tab (lib/draft) so the Watch page can simulate it;
  // opening the editor again restores it while the stored version is still the one it was made from.
  const drafted = !isNew && view ? { app: view.application, graph: view.graph, base: view.version, spec: view.spec } : null;
  const [restored] = useState(() => {
    const d = drafted ? readDraft(drafted.app, drafted.graph, drafted.base) : null;
    return d && !jsonEqual(d.doc, drafted!.spec) ? d : null;
  });
  const [model, setModel] = useState<FormModel>(() => {
    if (!view) return docToForm((fromAI && reviewDraft()) || readNew<GraphDoc>("graph") || starter);
    const spec = view.spec as GraphDoc;
    if (clone) return docToForm(cloneDoc(spec, `${view.graph}-copy`).doc);
    const m = docToForm(restored ? restored.doc : spec);
    if (mode === "enforce" && m.mode === "watch") {
      // Configure limits: enforcement selected, and the version bumped because a mode change needs it.
      return { ...m, mode: "enforce", watchSeconds: null, watchStartedAt: null, version: Math.max(m.version ?? 0, view.version) + 1 };
    }
    return m;
  });
  useEffect(() => {
    if (clone && view) { const c = cloneDoc(view.spec as GraphDoc, ""); setCloneNote({ shared: c.sharedKeys, egress: c.egressNodes }); }
    if (mode === "enforce" && view && (view.spec as GraphDoc).watch) setNotes([`Enforcement selected; version bumped to ${Math.max((view.spec as GraphDoc).version, view.version) + 1} because leaving Watch needs a higher version. Enter limits and save to activate them.`]);
  }, []); // eslint-disable-line react-hooks/exhaustive-deps
  const [text, setText] = useState(() => JSON.stringify(formToDoc(model), null, 2));
  const [parseErr, setParseErr] = useState<string | null>(null);
  const [serverProblems, setServerProblems] = useState<Problem[]>([]);

  const doc = useMemo(() => formToDoc(model), [model]);
  useEffect(() => {
    if (!drafted) return;
    if (jsonEqual(doc, drafted.spec)) dropDraft(drafted.app, drafted.graph);
    else keepDraft(drafted.app, drafted.graph, drafted.base, doc, Date.now());
  }, [doc]); // eslint-disable-line react-hooks/exhaustive-deps
  // New graph keeps its typed work per tab until it is created.
  const plainNew = !view && !fromAI;
  const dropNewDraft = () => dropNew("graph");
  useEffect(() => {
    if (!plainNew) return;
    if (jsonEqual(doc, starter)) dropNew("graph"); else keepNew("graph", doc, Date.now());
  }, [doc]); // eslint-disable-line react-hooks/exhaustive-deps
  const unsaved = view ? (clone ? true : !jsonEqual(doc, drafted?.spec)) : !jsonEqual(doc, starter);
  useLeaveGuard(canWrite && unsaved ? `Leave ${title} without saving? ${plainNew || drafted ? "Your draft stays in this tab until you discard it." : "Your changes are lost."}` : null);
  const schemaProblems: Problem[] = useMemo(() => (isV1(doc) ? [] : graphValidator.validate(doc).map((p) => ({ rule: "schema", message: p.message, at: p.at }))), [doc]);
  const problems = [...serverProblems, ...schemaProblems];
  const target = () => {
    if (!isNew && view) return { app: view.application, graph: view.graph };
    return { app: (model.application ?? "").trim() || "default", graph: (model.graph ?? "").trim() };
  };
  const previewAt = target();
  const enforced = usePreview(canWrite && !schemaProblems.length && model.legacy === null, previewAt.app, previewAt.graph, doc);

  const toJSON = () => { setText(JSON.stringify(formToDoc(model), null, 2)); setParseErr(null); setViewKind("json"); };
  const fromJSON = (t: string): boolean => {
    try { setModel(docToForm(JSON.parse(t))); setParseErr(null); return true; }
    catch (e) { setParseErr((e as Error).message); return false; }
  };
  const toForm = () => { if (fromJSON(text)) setViewKind("form"); };
  useEffect(() => { if (viewKind === "json") setText(JSON.stringify(formToDoc(model), null, 2)); }, []); // eslint-disable-line react-hooks/exhaustive-deps


  const flow = useSaveFlow((res) => {
    const t = target();
    if (drafted) dropDraft(drafted.app, drafted.graph);
    if (isNew) dropNewDraft();
    keepSaved(t.app, t.graph, res);
    navigate(isNew ? graphHref(t.app, t.graph, "guide", "created=1") : graphHref(t.app, t.graph, "", "saved=1"), false, true);
  }, (ae) => {
    const ps = ae.body?.problems?.length ? ae.body.problems : ae.body?.field ? [{ rule: ae.body.rule ?? "", message: ae.message, at: `/${ae.body.field}` }] : [];
    setServerProblems(ps);
    // A refused save scrolls to and focuses the first problem; the summary is repeated by the button.
    if (ps.length) window.setTimeout(() => focusAt(ps[0].at ?? ""), 0);
  });

  const save = () => {
    let current = model;
    if (viewKind === "json") {
      try { current = docToForm(JSON.parse(text)); setModel(current); } catch (e) { setParseErr((e as Error).message); return; }
    }
    const t = target();
    if (!t.graph) { setServerProblems([{ rule: "name", message: "name the graph", at: "/graph" }]); window.setTimeout(() => focusAt("/graph"), 0); return; }
    if (schemaProblems.length) { window.setTimeout(() => focusAt(schemaProblems[0].at ?? ""), 0); return; }
    setServerProblems([]);
    void flow.check({ app: t.app, graph: t.graph, doc: formToDoc(current), create: isNew, etag });
  };
  const saveErr = flow.stage.kind === "failed" ? flow.stage.error : null;
  const versionBump = saveErr?.status === 409 && (saveErr.body?.rules ?? (saveErr.body?.rule ? [saveErr.body.rule] : [])).includes("version-bump") && !isNew && model.legacy === null;
  const raiseVersion = () => {
    const next = Math.max(view?.version ?? 0, model.version ?? 0) + 1;
    const m = { ...model, version: next };
    setModel(m);
    if (viewKind === "json") setText(JSON.stringify(formToDoc(m), null, 2));
    setNotes((n) => [...n, `Version raised to ${next} by you; review and save again.`]);
    flow.cancel();
  };

  return (
    <ProblemsContext.Provider value={problems}>
      <div className="spread">
        <div><h1>{title}</h1><p className="sub">One draft, two views: the guided form and the JSON document. Switching keeps every field.</p></div>
        <div className="row" role="tablist" aria-label="editor view">
          <button type="button" role="tab" aria-selected={viewKind === "form"} aria-pressed={viewKind === "form"} onClick={toForm} data-testid="view-form">Form</button>
          <button type="button" role="tab" aria-selected={viewKind === "json"} aria-pressed={viewKind === "json"} onClick={toJSON} data-testid="view-json">JSON</button>
        </div>
      </div>
      {fromAI ? (
        <div className="notice" data-testid="ai-draft-note">
          Draft from the AI agent, validated by Gate's compiler and not saved. Check its assumptions and routing; creating it declares it like any other graph, and queue ownership and availability are checked again then.
        </div>
      ) : null}
      {clone && cloneNote ? (
        <div className="notice warn" data-testid="clone-note">
          The clone gets a new name, version 1, a fresh Watch timer and Gate-owned incoming queues.
          {cloneNote.egress.length ? <> Name new outgoing queues for {cloneNote.egress.join(", ")}: two graphs must not deliver to one queue.</> : null}
          {cloneNote.shared.length ? <> Shared keys kept: {cloneNote.shared.map((k) => <code key={k}>{k} </code>)} — the clone spends the same application-wide allowance as the original. Review them.</> : null}
        </div>
      ) : null}
      {restored ? (
        <div className="notice" data-testid="draft-restored">
          Your unsaved draft from {when(restored.at)} is restored (made from the stored version {restored.base}). Save to activate it; Cancel discards it.
        </div>
      ) : null}
      {notes.map((n, i) => <div key={i} className="notice" data-testid="version-note">{n}</div>)}
      {view && !clone && view.running === false ? <div className="notice warn">No relay runs this graph right now: pushes are queued and wait in the ingress queue; saving stores it and a relay starts it when one runs.</div> : null}
      {saveErr ? (
        <div className="notice bad" role="alert" data-testid="save-error">
          <strong>The server refused the document (HTTP {saveErr.status})</strong>
          {serverProblems.length ? <ul>{serverProblems.map((p, i) => <li key={i}><code>[{p.rule}]</code> at <a href="#" onClick={(e) => { e.preventDefault(); focusAt(p.at ?? ""); }}>{p.at || "the document"}</a>: {p.message}</li>)}</ul> : <div>{saveErr.message}</div>}
        </div>
      ) : null}
      {viewKind === "form" ? <EnforcedContext.Provider value={enforced}><GraphForm model={model} onChange={(m) => { setModel(m); }} isNew={isNew} /></EnforcedContext.Provider> : (
        <div className="card">
          <label htmlFor="json-editor" className="small muted">Graph document (v2, JSON Schema draft 2020-12 from libs/schema)</label>
          <textarea id="json-editor" className="json" data-testid="json-editor" spellCheck={false} value={text} aria-invalid={!!parseErr || undefined}
            onChange={(e) => { setText(e.target.value); fromJSON(e.target.value); }} />
          {parseErr ? <div className="fielderr" role="alert">Not valid JSON: {parseErr}. The form keeps the last valid draft.</div> : null}
          {problems.length ? (
            <ul className="small" data-testid="json-problems">{problems.map((p, i) => <li key={i}><code>{p.at || "/"}</code> {p.rule ? <code>[{p.rule}]</code> : null} {p.message}</li>)}</ul>
          ) : <div className="small muted">Matches the schema. The server's rules (shares, sub-windows, ownership) are checked on save.</div>}
        </div>
      )}
      <SavePanel flow={flow} verb={isNew ? "Create" : "Save"} />
      {saveErr ? (
        <div className="notice bad small" role="status" data-testid="save-summary">
          Not saved (HTTP {saveErr.status}): {problems.length ? `${problems.length} problem${problems.length > 1 ? "s" : ""}, the first at ${problems[0].at || "the document"}: ${problems[0].message}` : saveErr.message}
          {versionBump ? <div><button type="button" onClick={raiseVersion} data-testid="raise-version">Raise the version to {Math.max(view?.version ?? 0, model.version ?? 0) + 1}</button> (this change needs a version above the stored {view?.version}).</div> : null}
        </div>
      ) : null}
      <div className="row" style={{ marginTop: 14 }}>
        {canWrite ? <button type="button" className="primary" disabled={flow.busy || flow.stage.kind === "review"} onClick={save} data-testid="save">{flow.stage.kind === "checking" ? "Checking…" : isNew ? "Review and create" : "Review and save"}</button>
          : <span className="muted">Read-only: your account is not an administrator (GATE_ADMIN_EMAILS).</span>}
        {drafted && (view!.spec as GraphDoc).watch ? (
          <button type="button" onClick={() => navigate(graphHref(view!.application, view!.graph, "watch"), false, true)} data-testid="simulate-draft"
            title="Replays the Watch recording through this draft on the Watch page; nothing is saved">Simulate this draft</button>
        ) : null}
        {view ? <a href={graphHref(view.application, view.graph)} className="button" data-testid="cancel" onClick={(e) => { e.preventDefault(); if (!mayLeave()) return; if (drafted) dropDraft(drafted.app, drafted.graph); navigate(graphHref(view.application, view.graph), false, true); }}>Cancel</a> : null}
        {schemaProblems.length ? <span className="small muted">{schemaProblems.length} schema problem{schemaProblems.length > 1 ? "s" : ""} shown at their fields</span> : null}
      </div>
    </ProblemsContext.Provider>
  );
}

function focusAt(at: string) {
  let p = at;
  for (;;) {
    const el = document.querySelector<HTMLElement>(`[data-at="${CSS.escape(p)}"]`);
    if (el) { el.scrollIntoView({ block: "center" }); (el.matches("input,select,textarea") ? el : el.querySelector<HTMLElement>("input,select,textarea"))?.focus(); return; }
    if (!p) return;
    p = p.slice(0, p.lastIndexOf("/"));
  }
}
