// Guided-form building blocks: every input carries the JSON pointer of the
// document field it edits (data-at), so a rule refusal from the server or a
// schema problem is shown at the field it names.
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import type { Problem, Resolved } from "../wire";
import { emptyBudget, hopsText, keysText, parseHops, parseKeys, type FormBudget, type FormModel, type FormNode, type FormPath, type Num } from "./doc";
import { duration, fmt, windowText } from "./ui";

export const ProblemsContext = createContext<Problem[]>([]);

/**
 * What Gate will enforce for each budget, from the server's dry run of the
 * draft (resolved.nodes[].budgets): the form's hints show it, never a
 * number worked out here. Null until a dry run answered.
 */
export const EnforcedContext = createContext<Resolved | null>(null);

function enforcedHint(r: Resolved | null, base: string, i: number, b: FormBudget): string {
  if (!b.timeMs) return "at least 100";
  const node = base.split("/")[2] ?? "";
  const rb = r?.nodes.find((n) => n.node === node)?.budgets[i];
  const whole = b.timeMs % 1000 === 0;
  if (rb && rb.count === b.count && rb.timeMs === b.timeMs) {
    const exact = rb.windowSubSeconds * 1000 * rb.subWindows === rb.timeMs;
    return `${exact ? "enforced as" : "not whole seconds per sub-window: enforced tighter, as"} ${fmt(rb.countSub)} per ${fmt(rb.windowSubSeconds)} s × ${rb.subWindows} sub-window${rb.subWindows === 1 ? "" : "s"}`;
  }
  if (!whole) return `${fmt(b.timeMs)} ms is not whole seconds: Gate enforces whole-second sub-windows, tighter than declared; the review before saving shows the numbers`;
  return `= ${duration(b.timeMs / 1000)}`;
}

/** Problems exactly at this pointer. */
export function useProblemsAt(at: string) {
  return useContext(ProblemsContext).filter((p) => (p.at ?? "") === at);
}

export function FieldErrors({ at }: { at: string }) {
  const ps = useProblemsAt(at);
  if (!ps.length) return null;
  return <>{ps.map((p, i) => <div key={i} className="fielderr" role="alert" data-testid="field-error" data-error-at={at}>{p.rule ? <code>[{p.rule}]</code> : null} {p.message}</div>)}</>;
}

export function TextField({ label, at, value, onChange, placeholder, help, required, testid }: {
  label: string; at: string; value: string | null; onChange: (v: string | null) => void; placeholder?: string; help?: ReactNode; required?: boolean; testid?: string;
}) {
  const bad = useProblemsAt(at).length > 0;
  return (
    <label className="field">
      <span className="name">{label}{required ? " *" : ""}</span>
      <input data-at={at} data-testid={testid} value={value ?? ""} placeholder={placeholder} aria-invalid={bad || undefined}
        onChange={(e) => onChange(e.target.value === "" ? null : e.target.value)} />
      {help ? <span>{help}</span> : null}
      <FieldErrors at={at} />
    </label>
  );
}

export function NumField({ label, at, value, onChange, help, min, max, step, required, testid }: {
  label: string; at: string; value: Num; onChange: (v: Num) => void; help?: ReactNode; min?: number; max?: number; step?: number; required?: boolean; testid?: string;
}) {
  // Keep the raw text so "1." or "" do not jump while typing.
  const [raw, setRaw] = useState(value === null ? "" : String(value));
  useEffect(() => { if ((raw === "" ? null : Number(raw)) !== value) setRaw(value === null ? "" : String(value)); }, [value]); // eslint-disable-line react-hooks/exhaustive-deps
  const bad = useProblemsAt(at).length > 0;
  return (
    <label className="field">
      <span className="name">{label}{required ? " *" : ""}</span>
      <input data-at={at} data-testid={testid} inputMode="decimal" value={raw} aria-invalid={bad || undefined} min={min} max={max} step={step}
        onChange={(e) => { const t = e.target.value.trim(); setRaw(e.target.value); if (t === "") onChange(null); else if (!Number.isNaN(Number(t))) onChange(Number(t)); }} />
      {help ? <span>{help}</span> : null}
      <FieldErrors at={at} />
    </label>
  );
}

/** Limits per key of a scoped budget: one "value = count" per line (at most 1,000; more through the runtime API). */
function KeysField({ at, keys, onChange, count }: { at: string; keys: Record<string, number> | null; onChange: (v: Record<string, number> | null) => void; count: Num }) {
  const [raw, setRaw] = useState(keysText(keys));
  const [bad, setBad] = useState<number | null>(null);
  // A change from elsewhere (the JSON view) shows here unless it is what the text already says.
  useEffect(() => { if (JSON.stringify(parseKeys(raw).keys) !== JSON.stringify(keys && Object.keys(keys).length ? keys : null)) setRaw(keysText(keys)); }, [keys]); // eslint-disable-line react-hooks/exhaustive-deps
  const problems = useProblemsAt(at).length > 0;
  return (
    <label className="field" style={{ gridColumn: "1 / -1" }}>
      <span className="name">limits per key (value = count)</span>
      <textarea data-at={at} data-testid="budget-keys" rows={3} value={raw} aria-invalid={bad !== null || problems || undefined}
        placeholder={"acct-42 = 500\ntrial-7 = 5"}
        onChange={(e) => { setRaw(e.target.value); const r = parseKeys(e.target.value); setBad(r.bad); if (r.bad === null) onChange(r.keys); }} />
      <span>each value counts its own count per window (higher or lower than {count ?? "count"}); every other value counts the budget's. At most 1,000 here — set more at runtime with PUT …/budgets/&#123;id&#125;/keys/&#123;value&#125;, which wins for the same value.</span>
      {bad !== null ? <span className="error" role="alert" data-testid="budget-keys-bad">line {bad}: write a value, “=”, and a whole count, e.g. acct-42 = 500</span> : null}
      <FieldErrors at={at} />
    </label>
  );
}

export function BudgetEditor({ budgets, onChange, base, canRemoveAll }: { budgets: FormBudget[]; onChange: (b: FormBudget[]) => void; base: string; canRemoveAll?: boolean }) {
  const set = (i: number, patch: Partial<FormBudget>) => onChange(budgets.map((b, j) => (j === i ? { ...b, ...patch } : b)));
  const enforced = useContext(EnforcedContext);
  return (
    <div>
      <FieldErrors at={base} />
      {budgets.map((b, i) => {
        const at = `${base}/${i}`;
        return (
          <fieldset key={i} className="card" style={{ marginBottom: 8 }} data-at={at}>
            <legend className="small">
              budget {b.id ?? `b${i}`}{b.count && b.timeMs ? ` — ${windowText(b.count, b.timeMs)}` : ""}{" "}
              {b.confidence === "assumed" ? <span className="badge warn" title="an example amount: verify the provider's quota before enforcing">assumed</span> : null}
              {b.sharedKey ? <span className="badge info" title="every node and graph of this application naming this key spends one counter">shared “{b.sharedKey}”</span> : null}
            </legend>
            <FieldErrors at={at} />
            <div className="fields">
              <TextField label="id" at={`${at}/id`} value={b.id} onChange={(v) => set(i, { id: v })} placeholder={`b${i}`} />
              <NumField label="count" at={`${at}/count`} value={b.count} onChange={(v) => set(i, { count: v })} required testid="budget-count" />
              <NumField label="window (ms)" at={`${at}/timeMs`} value={b.timeMs} onChange={(v) => set(i, { timeMs: v })} required help={<span data-testid="window-hint">{enforcedHint(enforced, base, i, b)}</span>} />
              <NumField label="sub-windows" at={`${at}/subWindows`} value={b.subWindows} onChange={(v) => set(i, { subWindows: v })} help="blank = Gate's default" />
              <TextField label="per payload field (scopeBy)" at={`${at}/scopeBy`} value={b.scopeBy} onChange={(v) => set(i, { scopeBy: v })} placeholder="payload.accountId" />
              <TextField label="only operations (whenOp)" at={`${at}/whenOp`} value={b.whenOp ? b.whenOp.join(", ") : null}
                onChange={(v) => set(i, { whenOp: v === null ? null : v.split(",").map((s) => s.trim()).filter((s, k, a) => s !== "" || k < a.length - 1) })} placeholder="delete.*, write" />
              <TextField label="shared key" at={`${at}/sharedKey`} value={b.sharedKey} onChange={(v) => set(i, { sharedKey: v })} help="joins an application-wide allowance" />
              <label className="field"><span className="name">confidence</span>
                <select data-at={`${at}/confidence`} value={b.confidence} onChange={(e) => set(i, { confidence: e.target.value as FormBudget["confidence"] })}>
                  <option value="">(not said)</option><option value="assumed">assumed</option><option value="inferred">inferred</option><option value="documented">documented</option>
                </select><FieldErrors at={`${at}/confidence`} /></label>
              {b.confidence === "documented" || b.source !== null || b.asOf !== null ? <>
                <TextField label="source" at={`${at}/source`} value={b.source} onChange={(v) => set(i, { source: v })} placeholder="https://…" />
                <TextField label="as of" at={`${at}/asOf`} value={b.asOf} onChange={(v) => set(i, { asOf: v })} placeholder="2026-10-01" />
              </> : null}
              <label className="field"><span className="name">follows the vendor's headers</span>
                <select data-at={`${at}/vendorMeter`} data-testid="budget-vendor-meter" value={b.vendorMeter?.headers ?? ""}
                  onChange={(e) => set(i, { vendorMeter: e.target.value === "" ? null : { ...(b.vendorMeter ?? {}), headers: e.target.value } })}>
                  <option value="">no (the declared count only)</option>
                  <option value="x-ratelimit">X-RateLimit-*</option>
                  <option value="ratelimit">IETF RateLimit / RateLimit-Policy</option>
                  <option value="github">GitHub (X-RateLimit-* with -Resource)</option>
                  {b.vendorMeter && !["", "x-ratelimit", "ratelimit", "github"].includes(b.vendorMeter.headers) ? <option value={b.vendorMeter.headers}>{b.vendorMeter.headers}</option> : null}
                </select>
                <span>workers report each answer to …/observe; Gate only ever goes lower than declared</span>
                <FieldErrors at={`${at}/vendorMeter/headers`} /></label>
              {b.scopeBy !== null || b.keys !== null ? <KeysField at={`${at}/keys`} keys={b.keys} onChange={(v) => set(i, { keys: v })} count={b.count} /> : null}
              {b.vendorMeter ? <TextField label="policy or resource" at={`${at}/vendorMeter/name`} value={b.vendorMeter.name ?? null}
                onChange={(v) => set(i, { vendorMeter: { headers: b.vendorMeter!.headers, ...(v === null ? {} : { name: v }) } })} placeholder="first policy / any resource" /> : null}
            </div>
            {budgets.length > 1 || canRemoveAll ? <button type="button" className="danger" onClick={() => onChange(budgets.filter((_, j) => j !== i))}>Remove budget</button> : null}
          </fieldset>
        );
      })}
      <button type="button" onClick={() => onChange([...budgets, emptyBudget()])}>Add budget</button>
    </div>
  );
}

function NodeEditor({ n, onChange, onRemove, onRename, names }: { n: FormNode; onChange: (n: FormNode) => void; onRemove: () => void; onRename: (to: string) => void; names: string[] }) {
  const at = `/nodes/${n.name}`;
  const set = (p: Partial<FormNode>) => onChange({ ...n, ...p });
  const entry = n.ingressKind === "true" || n.ingressKind === "object";
  const yours = n.ingressKind === "object" && n.ingressQueue !== null;
  const [rename, setRename] = useState(n.name);
  useEffect(() => setRename(n.name), [n.name]);
  return (
    <section className="card" style={{ marginBottom: 12 }} data-at={at} data-testid={`node-${n.name}`}>
      <div className="spread"><h3>Node {n.name}</h3><button type="button" className="danger" onClick={onRemove}>Remove node</button></div>
      <FieldErrors at={at} />
      <div className="fields">
        <label className="field"><span className="name">name</span>
          <input value={rename} onChange={(e) => setRename(e.target.value)} onBlur={() => { if (rename && rename !== n.name && !names.includes(rename)) onRename(rename); else setRename(n.name); }} /></label>
        <label className="field"><span className="name">incoming</span>
          <select data-at={`${at}/ingress`} value={!entry ? (n.ingressKind === "false" ? "false" : "absent") : yours ? "yours" : "gate"}
            onChange={(e) => {
              const v = e.target.value;
              if (v === "absent") set({ ingressKind: "absent", ingressQueue: null, partitions: null, http: null, shed: null });
              else if (v === "false") set({ ingressKind: "false", ingressQueue: null, partitions: null, http: null, shed: null });
              else if (v === "gate") set(n.ingressKind === "object" ? { ingressQueue: null } : { ingressKind: "true" });
              else set({ ingressKind: "object", ingressQueue: n.ingressQueue ?? "" });
            }}>
            <option value="absent">not an entry (interior)</option><option value="false">not an entry (explicit false)</option>
            <option value="gate">Gate-owned queue (HTTP push)</option><option value="yours">your queue</option>
          </select><FieldErrors at={`${at}/ingress`} /></label>
        {yours ? <TextField label="incoming queue" at={`${at}/ingress/queue`} value={n.ingressQueue} onChange={(v) => set({ ingressQueue: v ?? "" })} required /> : null}
        {entry ? <NumField label="partitions" at={`${at}/ingress/partitions`} value={n.partitions} help="blank = 16 for Gate's queue"
          onChange={(v) => set({ ingressKind: "object", partitions: v })} /> : null}
        {entry ? <label className="field"><span className="name">HTTP push</span>
          <select data-at={`${at}/ingress/http`} value={n.http === null ? "" : String(n.http)} onChange={(e) => set({ ingressKind: "object", http: e.target.value === "" ? null : e.target.value === "true" })}>
            <option value="">default</option><option value="true">on</option><option value="false">off</option></select></label> : null}
        {entry ? <label className="field"><span className="name">shed when full (429)</span>
          <select data-at={`${at}/ingress/shed`} value={n.shed === null ? "" : String(n.shed)} onChange={(e) => set({ ingressKind: "object", shed: e.target.value === "" ? null : e.target.value === "true" })}>
            <option value="">default (off)</option><option value="true">on</option><option value="false">off</option></select></label> : null}
        <label className="field"><span className="name">outgoing</span>
          <select data-at={`${at}/egress`} value={n.egressKind === "absent" ? "none" : "queue"}
            onChange={(e) => set(e.target.value === "none" ? { egressKind: "absent", egressQueue: "", egressGroup: null } : { egressKind: n.egressGroup !== null ? "object" : "string" })}>
            <option value="none">none (relays on)</option><option value="queue">a queue your workers consume</option></select><FieldErrors at={`${at}/egress`} /></label>
        {n.egressKind !== "absent" ? <>
          <TextField label="outgoing queue" at={`${at}/egress${n.egressKind === "object" ? "/queue" : ""}`} value={n.egressQueue} onChange={(v) => set({ egressQueue: v ?? "" })} required testid="egress-queue" />
          <TextField label="worker group" at={`${at}/egress/group`} value={n.egressGroup} onChange={(v) => set({ egressGroup: v, egressKind: v === null ? "string" : "object" })} />
        </> : null}
        <label className="field"><span className="name">cost per item</span>
          <select data-at={`${at}/cost`} value={n.costKind} onChange={(e) => set({ costKind: e.target.value as FormNode["costKind"] })}>
            <option value="absent">1 (default)</option><option value="fixed">a fixed number</option><option value="path">read from the payload</option></select><FieldErrors at={`${at}/cost`} /></label>
        {n.costKind === "fixed" ? <NumField label="cost" at={`${at}/cost`} value={n.costFixed} onChange={(v) => set({ costFixed: v })} /> : null}
        {n.costKind === "path" ? <>
          <TextField label="cost field" at={`${at}/cost/path`} value={n.costPath} onChange={(v) => set({ costPath: v ?? "" })} placeholder="payload.rooms" />
          <NumField label="default cost" at={`${at}/cost/default`} value={n.costDefault} onChange={(v) => set({ costDefault: v })} />
          <NumField label="max cost" at={`${at}/cost/max`} value={n.costMax} onChange={(v) => set({ costMax: v })} />
        </> : null}
        <NumField label="batch" at={`${at}/batch`} value={n.batch} onChange={(v) => set({ batch: v })} help="blank = GATE_STAGE_BATCH" />
        <NumField label="workers" at={`${at}/concurrency`} value={n.concurrency} onChange={(v) => set({ concurrency: v })} help="blank = derived" />
      </div>
      <h3>Budgets</h3>
      <BudgetEditor budgets={n.budgets ?? []} base={`${at}/budgets`} onChange={(b) => set({ budgets: b })} canRemoveAll />
    </section>
  );
}


function PathEditor({ p, i, onChange, onRemove }: { p: FormPath; i: number; onChange: (p: FormPath) => void; onRemove: () => void }) {
  const at = `/paths/${i}`;
  const [text, setText] = useState(hopsText(p.hops));
  useEffect(() => { if (hopsText(parseHops(text)) !== hopsText(p.hops)) setText(hopsText(p.hops)); }, [p.hops]); // eslint-disable-line react-hooks/exhaustive-deps
  const bad = useProblemsAt(`${at}/nodes`).length > 0;
  return (
    <fieldset className="card" style={{ marginBottom: 8 }} data-at={at} data-testid={`path-${p.name}`}>
      <legend className="small">path {p.name}</legend>
      <FieldErrors at={at} />
      <div className="fields">
        <TextField label="name" at={`${at}/name`} value={p.name} onChange={(v) => onChange({ ...p, name: v ?? "" })} required />
        <NumField label="share" at={`${at}/share`} value={p.share} onChange={(v) => onChange({ ...p, share: v })} help="fraction of each node's counter; blank = 1" testid="path-share" />
        <NumField label="priority" at={`${at}/priority`} value={p.priority} onChange={(v) => onChange({ ...p, priority: v })} help="lower is more important" />
        <label className="field" style={{ gridColumn: "span 2" }}><span className="name">nodes, in order (a → b → c + d for a fan-out)</span>
          <input data-at={`${at}/nodes`} value={text} aria-invalid={bad || undefined} onChange={(e) => { setText(e.target.value); onChange({ ...p, hops: parseHops(e.target.value) }); }} />
          <FieldErrors at={`${at}/nodes`} /></label>
      </div>
      <button type="button" className="danger" onClick={onRemove}>Remove path</button>
    </fieldset>
  );
}

export function GraphForm({ model, onChange, isNew }: { model: FormModel; onChange: (m: FormModel) => void; isNew: boolean }) {
  const set = (p: Partial<FormModel>) => onChange({ ...model, ...p });
  const names = model.nodes.map((n) => n.name);
  if (model.legacy !== null) {
    return <div className="notice warn">This is a v1 document. Edit it in the JSON view; gate-api maps it to v2 on save and answers with a warning for every field it mapped.</div>;
  }
  const newName = () => { let i = model.nodes.length + 1; while (names.includes(`node-${i}`)) i++; return `node-${i}`; };
  return (
    <div data-testid="graph-form">
      <FieldErrors at="" />
      <section className="card" style={{ marginBottom: 12 }}>
        <h3>Graph</h3>
        <div className="fields">
          {isNew ? <TextField label="application" at="/application" value={model.application} onChange={(v) => set({ application: v })} required testid="f-application" /> : null}
          {isNew ? <TextField label="name" at="/graph" value={model.graph} onChange={(v) => set({ graph: v })} required testid="f-graph" /> : null}
          <NumField label="version" at="/version" value={model.version} onChange={(v) => set({ version: v })} required testid="f-version" />
          <NumField label="max attempts (re-entry)" at="/maxAttempts" value={model.maxAttempts} onChange={(v) => set({ maxAttempts: v })} help="blank = 3" />
          <label className="field"><span className="name">minute roll-ups</span>
            <select data-at="/counters" value={model.counters === null ? "off" : "on"} onChange={(e) => set({ counters: e.target.value === "on" ? 60 : null })}>
              <option value="off">off</option><option value="on">on (60 s)</option></select><FieldErrors at="/counters" /></label>
          <label className="field"><span className="name">mode</span>
            <select data-at="/watch" data-testid="f-mode" value={model.mode} onChange={(e) => set({ mode: e.target.value as FormModel["mode"], watchSeconds: model.watchSeconds ?? 86400 })}>
              <option value="enforce">enforce limits</option><option value="watch">Watch traffic (no limits applied)</option></select><FieldErrors at="/watch" /></label>
          {model.mode === "watch" ? <NumField label="watch for (seconds)" at="/watch/durationSeconds" value={model.watchSeconds} onChange={(v) => set({ watchSeconds: v })} help="120 (2 min) to 2592000 (30 days)" /> : null}
        </div>
      </section>
      <h2>Nodes</h2>
      <FieldErrors at="/nodes" />
      {model.nodes.map((n, i) => (
        <NodeEditor key={i} n={n} names={names}
          onChange={(nn) => set({ nodes: model.nodes.map((x, j) => (j === i ? nn : x)) })}
          onRemove={() => set({ nodes: model.nodes.filter((_, j) => j !== i) })}
          onRename={(to) => set({
            nodes: model.nodes.map((x, j) => (j === i ? { ...x, name: to } : x)),
            paths: model.paths.map((p) => ({ ...p, hops: p.hops.map((h) => h.map((s) => (s === n.name ? to : s))) })),
          })} />
      ))}
      <button type="button" onClick={() => set({ nodes: [...model.nodes, { ...emptyNodeFor(newName()) }] })}>Add node</button>
      <h2 style={{ marginTop: 16 }}>Paths</h2>
      <FieldErrors at="/paths" />
      {model.paths.map((p, i) => (
        <PathEditor key={i} p={p} i={i} onChange={(np) => set({ paths: model.paths.map((x, j) => (j === i ? np : x)) })} onRemove={() => set({ paths: model.paths.filter((_, j) => j !== i) })} />
      ))}
      <button type="button" onClick={() => set({ paths: [...model.paths, { name: `path-${model.paths.length + 1}`, priority: null, share: null, hops: names.length ? [[names[0]]] : [] }] })}>Add path</button>
    </div>
  );
}

function emptyNodeFor(name: string): FormNode {
  return { name, budgets: [{ ...emptyBudget(), id: "global", count: 100, timeMs: 1000 }], costKind: "absent", costFixed: null, costPath: "", costDefault: null, costMax: null,
    ingressKind: "absent", ingressQueue: null, partitions: null, http: null, shed: null, egressKind: "absent", egressQueue: "", egressGroup: null, batch: null, concurrency: null };
}
