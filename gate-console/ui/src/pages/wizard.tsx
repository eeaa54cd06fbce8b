// New target: four steps (application and name; queues; limits or Watch;
// review), one PUT, then the integration guide.
import { useEffect, useState } from "react";
import type { Problem } from "../wire";
import { docBudget, formBudget, jsonEqual, templates, WATCH_MAX, WATCH_MIN, wizardDoc, type FormBudget, type Template } from "../lib/doc";
import { dropNew, keepNew, readNew } from "../lib/draft";
import { BudgetEditor, EnforcedContext, FieldErrors, NumField, ProblemsContext, TextField } from "../lib/form";
import { graphHref, navigate, useLeaveGuard, useQueryParam } from "../lib/router";
import { keepSaved, SavePanel, usePreview, useSaveFlow } from "../lib/save";
import { graphValidator } from "../lib/schema";
import { duration, useCanWrite } from "../lib/ui";

const steps = ["Application and name", "Queues", "Rate limits", "Review"];
const units = { minutes: 60, hours: 3600, days: 86400 } as const;
/** The wizard step that edits the field at this JSON pointer. */
const stepOf = (at: string) => (at === "/application" || at === "/graph" ? 1 : /\/(ingress|egress)/.test(at) ? 2 : /\/(budgets|watch)/.test(at) ? 3 : 4);

interface WizardState {
  application: string | null; name: string | null; ingressKind: "gate" | "yours"; ingressQueue: string | null; partitions: number | null;
  egressQueue: string | null; egressGroup: string | null; mode: "enforce" | "watch"; template: Template; budgets: FormBudget[];
  watchN: number | null; watchUnit: keyof typeof units;
}
const initialWizard = (): WizardState => ({
  application: "default", name: null, ingressKind: "gate", ingressQueue: null, partitions: null, egressQueue: null, egressGroup: "workers",
  mode: "enforce", template: "global", budgets: templates.global.budgets.map(formBudget), watchN: 1, watchUnit: "days",
});

export function NewTarget() {
  const canWrite = useCanWrite();
  const [stepS] = useQueryParam("step", "1");
  const step = Math.min(4, Math.max(1, Number(stepS) || 1));
  // The typed work is kept per tab (sessionStorage) until the target is created.
  const [w, setW] = useState<WizardState>(() => ({ ...initialWizard(), ...(readNew<Partial<WizardState>>("wizard") ?? {}) }));
  const field = <K extends keyof WizardState>(k: K) => (v: WizardState[K]) => setW((cur) => ({ ...cur, [k]: v }));
  const { application, name, ingressKind, ingressQueue, partitions, egressQueue, egressGroup, mode, template, budgets, watchN, watchUnit } = w;
  const [setApplication, setName, setIngressKind, setIngressQueue, setPartitions, setEgressQueue, setEgressGroup, setMode, setBudgets, setWatchN, setWatchUnit] =
    [field("application"), field("name"), field("ingressKind"), field("ingressQueue"), field("partitions"), field("egressQueue"), field("egressGroup"), field("mode"), field("budgets"), field("watchN"), field("watchUnit")];
  useEffect(() => {
    if (jsonEqual(w, initialWizard())) dropNew("wizard"); else keepNew("wizard", w, Date.now());
  }, [w]);
  useLeaveGuard(canWrite && !jsonEqual(w, initialWizard()) ? "Leave New target without creating it? What you typed stays in this tab until you create or discard it." : null);

  const watchSeconds = (watchN ?? 0) * units[watchUnit];
  const doc = wizardDoc({
    application: application ?? "", name: name ?? "", ingressQueue: ingressKind === "yours" ? ingressQueue ?? "" : "", partitions,
    egressQueue: egressQueue ?? "", egressGroup: egressGroup ?? "", mode, watchSeconds, budgets: mode === "watch" ? [] : budgets.map(docBudget),
  });
  const schema: Problem[] = graphValidator.validate(doc).map((p) => ({ rule: "schema", message: p.message, at: p.at }));
  const flow = useSaveFlow((res) => {
    const app = application || "default", graph = name ?? "";
    dropNew("wizard");
    keepSaved(app, graph, res);
    navigate(graphHref(app, graph, "guide", "created=1"), false, true);
  });
  const err = flow.stage.kind === "failed" ? flow.stage.error : null;
  const server: Problem[] = err?.body?.problems ?? [];
  // A step's schema problems show once the user has tried to leave it.
  const [tried, setTried] = useState<number[]>([]);
  const problems = [...server, ...schema.filter((p) => tried.includes(stepOf(p.at ?? "")))];
  const blocking = (s: number) => schema.filter((p) => stepOf(p.at ?? "") === s);

  const enforced = usePreview(canWrite && step >= 3 && mode === "enforce" && !schema.length, application || "default", name ?? "", doc);
  const pick = (t: Template) => setW((cur) => ({ ...cur, template: t, budgets: templates[t].budgets.map(formBudget) }));
  const create = () => {
    if (schema.length) { setTried([1, 2, 3, 4]); return; }
    void flow.check({ app: application || "default", graph: name ?? "", doc, create: true, etag: null });
  };
  const discard = () => {
    if (!window.confirm("Discard what you typed in New target?")) return;
    dropNew("wizard");
    flow.cancel();
    setW(initialWizard());
    navigate("/targets/new", true, true);
  };
  // Each step is a history entry: the browser's Back walks the steps, and the typed work stays.
  const go = (s: number) => {
    if (s > step && blocking(step).length) { setTried((t) => [...t, step]); return; }
    flow.cancel();
    if (s === step - 1 && history.state?.wizardStep === step) { history.back(); return; }
    history.pushState({ wizardStep: s }, "", `/targets/new?step=${s}`);
    window.dispatchEvent(new PopStateEvent("popstate"));
  };

  // Map budget pointers of the one node onto the editor.
  return (
    <ProblemsContext.Provider value={problems}>
      <h1>New target</h1>
      <p className="sub">A target is a one-node graph: an incoming queue, the limits, an outgoing queue your workers consume. For several nodes use Graphs → New graph.</p>
      <ol className="steps" aria-label="steps">
        {steps.map((s, i) => <li key={s} aria-current={step === i + 1 ? "step" : undefined}>{i + 1}. {s}</li>)}
      </ol>
      {!canWrite ? <div className="notice warn">Read-only: your account is not an administrator (GATE_ADMIN_EMAILS), so the target cannot be created.</div> : null}
      <div className="card" data-testid={`wizard-step-${step}`}>
        {step === 1 ? (
          <div className="fields">
            <TextField label="application" at="/application" value={application} onChange={setApplication} required testid="w-application" help="owner of the graph; part of every queue and kv name" />
            <TextField label="target name" at="/graph" value={name} onChange={(v) => setName(v === null ? null : v.toLowerCase())} required testid="w-name" help="a-z, 0-9 and -, up to 63" />
          </div>
        ) : null}
        {step === 2 ? (
          <div className="fields">
            <label className="field"><span className="name">incoming queue</span>
              <select value={ingressKind} onChange={(e) => setIngressKind(e.target.value as "gate" | "yours")} data-testid="w-ingress-kind">
                <option value="gate">Gate's own (push over HTTP or to the queue)</option><option value="yours">a queue you already write to</option>
              </select></label>
            {ingressKind === "yours" ? <TextField label="your incoming queue" at="/nodes/limit/ingress/queue" value={ingressQueue} onChange={setIngressQueue} required /> : null}
            <NumField label="partitions" at="/nodes/limit/ingress/partitions" value={partitions} onChange={setPartitions} help="blank = 16 for Gate's queue" />
            <TextField label="outgoing queue" at="/nodes/limit/egress/queue" value={egressQueue} onChange={setEgressQueue} required testid="w-egress" help="your workers consume admitted work here" />
            <TextField label="worker group" at="/nodes/limit/egress/group" value={egressGroup} onChange={setEgressGroup} help="the consumer group your workers use" />
          </div>
        ) : null}
        {step === 3 ? (
          <div>
            <div className="row" role="radiogroup" aria-label="mode" style={{ marginBottom: 12 }}>
              <label className="check"><input type="radio" name="mode" checked={mode === "enforce"} onChange={() => setMode("enforce")} data-testid="w-mode-enforce" /> Set rate limits</label>
              <label className="check"><input type="radio" name="mode" checked={mode === "watch"} onChange={() => setMode("watch")} data-testid="w-mode-watch" /> Watch traffic first</label>
            </div>
            {mode === "enforce" ? <>
              <div className="grid" role="radiogroup" aria-label="template" style={{ marginBottom: 12 }}>
                {(Object.keys(templates) as Template[]).map((t) => (
                  <label key={t} className="card check" style={{ alignItems: "flex-start" }}>
                    <input type="radio" name="template" checked={template === t} onChange={() => pick(t)} data-testid={`w-template-${t}`} />
                    <span><strong>{templates[t].title}</strong><br /><span className="small muted">{templates[t].explain}</span></span>
                  </label>
                ))}
              </div>
              <div className="notice warn">The amounts are examples marked <strong>assumed</strong>: set them to your provider's real quota before relying on them.</div>
              <EnforcedContext.Provider value={enforced}><BudgetEditor budgets={budgets} onChange={setBudgets} base="/nodes/limit/budgets" /></EnforcedContext.Provider>
            </> : (
              <div>
                <p>Gate consumes the incoming queue and relays everything to the outgoing queue, charging no budget and shedding nothing, and records relayed items and cost per node. Watch needs PostgreSQL history. At the end the target is <em>ready for review</em> and keeps relaying in Watch until you configure limits.</p>
                <div className="fields">
                  <NumField label="observe for" at="/watch/durationSeconds" value={watchN} onChange={setWatchN} testid="w-watch-n" />
                  <label className="field"><span className="name">unit</span>
                    <select value={watchUnit} onChange={(e) => setWatchUnit(e.target.value as keyof typeof units)} data-testid="w-watch-unit">
                      <option value="minutes">minutes</option><option value="hours">hours</option><option value="days">days</option></select></label>
                </div>
                <div className={watchSeconds < WATCH_MIN || watchSeconds > WATCH_MAX ? "fielderr" : "small muted"} data-testid="w-watch-range">
                  {duration(watchSeconds)} — the period must be between 2 minutes and 30 days.</div>
              </div>
            )}
            <FieldErrors at="/nodes/limit/budgets" />
          </div>
        ) : null}
        {step === 4 ? (
          <div>
            <h2>Review</h2>
            <dl className="kv">
              <dt>target</dt><dd>{application}/{name}</dd>
              <dt>incoming</dt><dd>{ingressKind === "yours" ? ingressQueue : "Gate-owned queue (named on creation), HTTP push on"}</dd>
              <dt>outgoing</dt><dd>{egressQueue}{egressGroup ? ` (group ${egressGroup})` : ""}</dd>
              <dt>mode</dt><dd>{mode === "watch" ? `Watch for ${duration(watchSeconds)}` : `${budgets.length} budget${budgets.length > 1 ? "s" : ""} enforced`}</dd>
            </dl>
            <h3>Document</h3>
            <pre data-testid="w-review-json">{JSON.stringify(doc, null, 2)}</pre>
            {err ? <div className="notice bad" role="alert" data-testid="save-error"><strong>The server refused it (HTTP {err.status})</strong><div>{err.message}</div>
              {server.length ? <div className="small">Go back to step {stepOf(server[0].at ?? "")} to fix {server[0].at}.</div> : null}</div> : null}
          </div>
        ) : null}
        {step === 4 ? <SavePanel flow={flow} verb="Create" /> : null}
        {tried.includes(step) && blocking(step).length && step < 4 ? <div className="small fielderr" style={{ marginTop: 8 }}>Fix the fields marked above to continue.</div> : null}
      </div>
      <div className="row" style={{ marginTop: 12 }}>
        {step > 1 ? <button type="button" onClick={() => go(step - 1)}>Back</button> : null}
        {step < 4 ? <button type="button" className="primary" onClick={() => go(step + 1)} disabled={(step === 3 && mode === "watch" && (watchSeconds < WATCH_MIN || watchSeconds > WATCH_MAX))} data-testid="w-next">Next</button> : null}
        {step === 4 && canWrite ? <button type="button" className="primary" onClick={create} disabled={flow.busy || flow.stage.kind === "review"} data-testid="w-create">{flow.stage.kind === "checking" ? "Checking…" : mode === "watch" ? "Review: create and start watching" : "Review: create target"}</button> : null}
        {canWrite && !jsonEqual(w, initialWizard()) ? <button type="button" onClick={discard} data-testid="w-discard">Discard</button> : null}
      </div>
    </ProblemsContext.Provider>
  );
}
