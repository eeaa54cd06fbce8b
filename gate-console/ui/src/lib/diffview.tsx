// What a change does, as the server computed it (libs/diff): the dry run's
// diff before a save, the stored diff of a history revision. Numbers are
// the enforced ones (sub-windows, ceilings, effective shares), never
// recomputed here.
import type { BudgetShape, Diff, PathShape, QueueShape } from "../wire";
import { duration, fmt } from "./ui";

const budgetText = (b: BudgetShape) => {
  const declared = `${fmt(b.count)} per ${duration(b.timeMs / 1000)}${b.timeMs % 1000 ? ` (${fmt(b.timeMs)} ms)` : ""}`;
  const enforced = `${fmt(b.countSub)} per ${fmt(b.windowSubSeconds)} s × ${b.subWindows} sub-window${b.subWindows === 1 ? "" : "s"}`;
  const extra = [b.scopeBy ? `per ${b.scopeBy}` : "", b.sharedKey ? `shared “${b.sharedKey}”` : "", b.whenOp.length ? `only ${b.whenOp.join(", ")}` : ""].filter(Boolean).join(" · ");
  return `${declared}, enforced as ${enforced}${extra ? ` · ${extra}` : ""}`;
};
const pathText = (p: PathShape) =>
  `${p.hops.map((h) => (Array.isArray(h) ? h.join(" + ") : h)).join(" → ")} · priority ${p.priority}${p.share !== null ? ` · share ${fmt(p.share, 3)}` : ""}${p.shares.length ? ` (effective ${p.shares.map((s) => `${s.node} ${fmt(s.share, 3)}`).join(", ")})` : ""}`;
const queueText = (q: QueueShape) => `${q.kind}${q.ownedByGate ? ", Gate-owned" : ""}${q.partitions !== null ? `, ${q.partitions} partitions` : ""}`;

function Change({ kind }: { kind: string }) {
  const cls = kind === "added" ? "good" : kind === "removed" ? "bad" : "info";
  return <span className={`badge ${cls}`}>{kind}</span>;
}

function FromTo({ from, to }: { from: string | null; to: string | null }) {
  if (from === null) return <span>{to}</span>;
  if (to === null) return <span><del>{from}</del></span>;
  return <span><del>{from}</del> → <ins>{to}</ins></span>;
}

/** Every line of a diff, grouped as libs/diff groups it. */
export function DiffView({ diff, testid = "diff" }: { diff: Diff; testid?: string }) {
  if (!diff.changed && !diff.created && !diff.deleted) {
    return <p className="small" data-testid={testid} data-changed="false">No change: the document is stored like this already, so saving changes nothing.</p>;
  }
  return (
    <div className="diff small" data-testid={testid} data-changed="true">
      <p>
        {diff.created ? <><strong>New graph</strong> at version {diff.toVersion}: everything below is added.</>
          : diff.deleted ? <><strong>Deleted</strong> (was version {diff.fromVersion}).</>
            : <>Version {diff.fromVersion} → {diff.toVersion}.</>}
        {diff.mode ? <> <strong data-testid="diff-mode">{diff.mode.from === "watch" ? "Limits activated" : "Watch started"}</strong> ({diff.mode.from} → {diff.mode.to}).</> : null}
      </p>
      {diff.settings.length ? <ul>{diff.settings.map((s) => <li key={s.field}>{s.field}: <FromTo from={s.from} to={s.to} /></li>)}</ul> : null}
      {diff.nodes.length ? <><h4>Nodes</h4><ul data-testid="diff-nodes">{diff.nodes.map((n) => (
        <li key={n.node}><Change kind={n.change} /> <code>{n.node}</code>
          {n.fields.length ? <ul>{n.fields.map((f) => <li key={f.field}>{f.field}: <FromTo from={f.from} to={f.to} /></li>)}</ul> : null}
          {n.budgets.length ? <ul>{n.budgets.map((b) => (
            <li key={b.budget} data-testid="diff-budget"><Change kind={b.change} /> budget <code>{b.budget}</code>: <FromTo from={b.from ? budgetText(b.from) : null} to={b.to ? budgetText(b.to) : null} /></li>
          ))}</ul> : null}
        </li>))}</ul></> : null}
      {diff.paths.length ? <><h4>Paths</h4><ul>{diff.paths.map((p) => (
        <li key={p.path}><Change kind={p.change} /> <code>{p.path}</code>: <FromTo from={p.from ? pathText(p.from) : null} to={p.to ? pathText(p.to) : null} /></li>))}</ul></> : null}
      {diff.queues.length ? <><h4>Queues</h4><ul data-testid="diff-queues">{diff.queues.map((q) => (
        <li key={q.queue}><Change kind={q.change} /> <code>{q.queue}</code>: {q.change === "added" ? <>provisioned ({q.to ? queueText(q.to) : ""})</> : q.change === "removed" ? <>left unused: no stage reads or writes it; the broker keeps it and its messages</> : <FromTo from={q.from ? queueText(q.from) : null} to={q.to ? queueText(q.to) : null} />}</li>))}</ul></> : null}
      {diff.groups.length ? <><h4>Consumer groups</h4><ul>{diff.groups.map((gr) => (
        <li key={gr.queue + gr.group}><Change kind={gr.change} /> <code>{gr.group}</code> on <code>{gr.queue}</code> ({gr.path} · {gr.node}){gr.seedsAt ? `, starts at the ${gr.seedsAt}` : ""}</li>))}</ul></> : null}
      {diff.counters.length ? <><h4>Counters whose window changes</h4><ul>{diff.counters.map((c) => (
        <li key={c.key}><code>{c.key}</code> ({c.node} · {c.budget}{c.shared ? ", shared: other graphs charging it see the change" : ""}): {fmt(c.fromCountSub)} per {fmt(c.fromWindowSeconds)} s → {fmt(c.toCountSub)} per {fmt(c.toWindowSeconds)} s; the live counter keeps its old window until it ends</li>))}</ul></> : null}
    </div>
  );
}

/** A warning "[rule] detail" as the server renders it. */
export function splitWarning(w: string): { rule: string; detail: string } {
  const m = /^\[([^\]]+)\]\s*(.*)$/s.exec(w);
  return m ? { rule: m[1], detail: m[2] } : { rule: "", detail: w };
}

export function Warnings({ warnings, testid = "warnings", title = "Gate warns" }: { warnings: string[]; testid?: string; title?: string }) {
  if (!warnings.length) return null;
  return (
    <div className="notice warn" data-testid={testid}>
      <strong>{title} ({warnings.length})</strong>
      <ul className="small">{warnings.map((w, i) => { const { rule, detail } = splitWarning(w); return <li key={i} data-rule={rule}>{rule ? <code>[{rule}]</code> : null} {detail}</li>; })}</ul>
    </div>
  );
}
