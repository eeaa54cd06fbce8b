// New target: four steps (application and name; queues; limits or Watch;
// review), one PUT, then the integration guide.
import { useState } from "react";
import type { Problem } from "../wire";
import { api, ApiError } from "../lib/api";
import { docBudget, formBudget, templates, WATCH_MAX, WATCH_MIN, wizardDoc, type FormBudget, type Template } from "../lib/doc";
import { BudgetEditor, FieldErrors, NumField, ProblemsContext, TextField } from "../lib/form";
import { graphHref, navigate, useQueryParam } from "../lib/router";
import { graphValidator } from "../lib/schema";
import { duration, useCanWrite } from "../lib/ui";

const steps = ["Application and name", "Queues", "Rate limits", "Review"];
const units = { minutes: 60, hours: 3600, days: 86400 } as const;
/** The wizard step that edits the field at this JSON pointer. */
const stepOf = (at: string) => (at === "/application" || at === "/graph" ? 1 : /\/(ingress|egress)/.test(at) ? 2 : /\/(budgets|watch)/.test(at) ? 3 : 4);

export function NewTarget() {
  const canWrite = useCanWrite();
  const [stepS, setStep] = useQueryParam("step", "1");
  const step = Math.min(4, Math.max(1, Number(stepS) || 1));
  const [application, setApplication] = useState<string | null>("default");
  const [name, setName] = useState<string | null>(null);
  const [ingressKind, setIngressKind] = useState<"gate" | "yours">("gate");
  const [ingressQueue, setIngressQueue] = useState<string | null>(null);
  const [partitions, setPartitions] = useState<number | null>(null);
  const [egressQueue, setEgressQueue] = useState<string | null>(null);
  const [egressGroup, setEgressGroup] = useState<string | null>("workers");
  const [mode, setMode] = useState<"enforce" | "watch">("enforce");
  const [template, setTemplate] = useState<Template>("global");
  const [budgets, setBudgets] = useState<FormBudget[]>(templates.global.budgets.map(formBudget));
  const [watchN, setWatchN] = useState<number | null>(1);
  const [watchUnit, setWatchUnit] = useState<keyof typeof units>("days");
  const [saving, setSaving] = useState(false);
  const [err, setErr] = useState<ApiError | null>(null);

  const watchSeconds = (watchN ?? 0) * units[watchUnit];
  const doc = wizardDoc({
    application: application ?? "", name: name ?? "", ingressQueue: ingressKind === "yours" ? ingressQueue ?? "" : "", partitions,
    egressQueue: egressQueue ?? "", egressGroup: egressGroup ?? "", mode, watchSeconds, budgets: mode === "watch" ? [] : budgets.map(docBudget),
  });
  const schema: Problem[] = graphValidator.validate(doc).map((p) => ({ rule: "schema", message: p.message, at: p.at }));
  const server: Problem[] = err?.body?.problems ?? [];
  // A step's schema problems show once the user has tried to leave it.
  const [tried, setTried] = useState<number[]>([]);
  const problems = [...server, ...schema.filter((p) => tried.includes(stepOf(p.at ?? "")))];
  const blocking = (s: number) => schema.filter((p) => stepOf(p.at ?? "") === s);

  const pick = (t: Template) => { setTemplate(t); setBudgets(templates[t].budgets.map(formBudget)); };
  const create = async () => {
    if (schema.length) { setTried([1, 2, 3, 4]); return; }
    setSaving(true); setErr(null);
    try {
      await api.declare(application || "default", name ?? "", doc);
      navigate(graphHref(application || "default", name ?? "", "guide", "created=1"));
    } catch (e) { setErr(e as ApiError); } finally { setSaving(false); }
  };
  const go = (s: number) => {
    if (s > step && blocking(step).length) { setTried((t) => [...t, step]); return; }
    setStep(String(s));
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
              <BudgetEditor budgets={budgets} onChange={setBudgets} base="/nodes/limit/budgets" />
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
        {tried.includes(step) && blocking(step).length && step < 4 ? <div className="small fielderr" style={{ marginTop: 8 }}>Fix the fields marked above to continue.</div> : null}
      </div>
      <div className="row" style={{ marginTop: 12 }}>
        {step > 1 ? <button type="button" onClick={() => go(step - 1)}>Back</button> : null}
        {step < 4 ? <button type="button" className="primary" onClick={() => go(step + 1)} disabled={(step === 3 && mode === "watch" && (watchSeconds < WATCH_MIN || watchSeconds > WATCH_MAX))} data-testid="w-next">Next</button> : null}
        {step === 4 && canWrite ? <button type="button" className="primary" onClick={create} disabled={saving} data-testid="w-create">{saving ? "Creating…" : mode === "watch" ? "Create and start watching" : "Create target"}</button> : null}
      </div>
    </ProblemsContext.Provider>
  );
}
