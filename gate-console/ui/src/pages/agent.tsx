// The AI agent's side panel: a conversation about one application that
// ends in a draft validated by Gate's compiler. The panel never saves:
// "Review in editor" opens the editor on the draft, and creating it is the
// editor's normal declare. Conversation and draft live in lib/agent
// (memory only).
import { useEffect, useRef, useState } from "react";
import type { AIMessage } from "../wire";
import { api, ApiError, useLoad } from "../lib/api";
import { clearAgent, setAgent, useAgent, type Turn } from "../lib/agent";
import type { GraphDoc } from "../lib/doc";
import { navigate } from "../lib/router";
import { Link, useCanWrite } from "../lib/ui";

const MAX_MESSAGES = 21;

let reviews = 0;

export function AgentPanel() {
  const agent = useAgent();
  const canWrite = useCanWrite();
  const status = useLoad(api.aiStatus, []);
  // Suggestions: the applications the server finds for what is typed.
  const apps = useLoad(() => api.apps({ q: agent.application.slice(0, 63), limit: 20 }), [agent.application]);
  const [text, setText] = useState("");
  const [error, setError] = useState<ApiError | null>(null);
  const endRef = useRef<HTMLDivElement>(null);
  useEffect(() => { endRef.current?.scrollIntoView?.({ block: "end" }); }, [agent.turns.length, agent.pending]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => { if (e.key === "Escape") setAgent({ open: false }); };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  const history: AIMessage[] = agent.turns.map((t) => ({ role: t.role, content: t.content }));
  const full = history.length >= MAX_MESSAGES;
  const started = agent.turns.length > 0;

  const send = async () => {
    const content = text.trim();
    if (!content || agent.pending || !agent.application) return;
    const messages: AIMessage[] = [...history, { role: "user", content }];
    setError(null);
    setAgent((s) => ({ pending: true, turns: [...s.turns, { role: "user", content }] }));
    setText("");
    try {
      const reply = await api.aiChat({ application: agent.application, messages, ...(agent.draft ? { draft: agent.draft } : {}) });
      const turn: Turn = { role: "assistant", content: reply.message, assumptions: reply.assumptions, warnings: reply.warnings, draft: reply.draft as GraphDoc | null };
      setAgent((s) => ({ pending: false, turns: [...s.turns, turn], draft: (reply.draft as GraphDoc | null) ?? s.draft }));
    } catch (e) {
      // The message was not answered: take it back out of the conversation
      // (roles must alternate) and offer it for another try.
      setAgent((s) => ({ pending: false, turns: s.turns.slice(0, -1) }));
      setText(content);
      setError(e instanceof ApiError ? e : new ApiError(0, String(e), null));
    }
  };

  const review = () => {
    reviews += 1;
    navigate(`/graphs/new?from=ai&d=${reviews}`);
  };

  const enabled = status.data?.enabled ?? false;
  const draft = agent.draft;
  return (
    <aside className="agent-panel" role="dialog" aria-label="AI agent" data-testid="agent-panel">
      <div className="spread agent-head">
        <div>
          <h2>AI agent</h2>
          {status.data ? <span className="badge info" data-testid="agent-model">{status.data.provider} · {status.data.model}</span> : null}
        </div>
        <button type="button" onClick={() => setAgent({ open: false })} aria-label="close the AI agent" data-testid="agent-close">✕</button>
      </div>
      <div className="agent-body">
        {status.error ? <div className="notice bad">The agent's status could not be read: {status.error.message}</div> : null}
        {status.data && !enabled ? (
          <div className="notice warn" data-testid="agent-setup">
            <strong>The AI agent is not configured.</strong> {status.data.setup}{" "}
            <Link to="/targets/new">Use the new-target wizard</Link> instead.
          </div>
        ) : null}
        {enabled && !canWrite ? <div className="notice" data-testid="agent-readonly">Read-only: drafting with the agent needs an administrator (GATE_ADMIN_EMAILS).</div> : null}
        {enabled ? (
          <>
            <p className="sub">Describe a new target's queues, limits or Watch period. The agent drafts one new graph, checked by Gate's compiler; nothing is saved until you create it in the editor. Only this conversation, the application, Watch availability and the current draft are sent to {status.data?.provider}.</p>
            <label className="field"><span className="name">Application</span>
              <input list="agent-apps" value={agent.application} disabled={started} data-testid="agent-app"
                onChange={(e) => setAgent({ application: e.target.value.trim().toLowerCase() })} placeholder="e.g. demo" />
              <datalist id="agent-apps">{(apps.data?.items ?? []).map((a) => <option key={a.application} value={a.application} />)}</datalist>
            </label>
            <ol className="agent-turns" data-testid="agent-turns">
              {agent.turns.map((t, i) => (
                <li key={i} className={`agent-turn ${t.role}`} data-testid={`agent-turn-${t.role}`}>
                  <div className="agent-text">{t.content}</div>
                  {t.assumptions && t.assumptions.length ? (
                    <div><span className="name">Assumptions</span><ul data-testid="agent-assumptions">{t.assumptions.map((a, j) => <li key={j}>{a}</li>)}</ul></div>
                  ) : null}
                  {t.warnings && t.warnings.length ? (
                    <div className="notice warn"><span className="name">Gate's warnings</span><ul data-testid="agent-warnings">{t.warnings.map((w, j) => <li key={j}>{w}</li>)}</ul></div>
                  ) : null}
                </li>
              ))}
              {agent.pending ? <li className="agent-turn assistant" role="status" aria-busy="true">Drafting…</li> : null}
            </ol>
            {error ? <div className="notice bad" role="alert" data-testid="agent-error">{error.message}</div> : null}
            {draft ? (
              <div className="card agent-draft" data-testid="agent-draft">
                <div><strong>Draft {draft.application}/{draft.graph}</strong> · {Object.keys(draft.nodes ?? {}).length} node(s), {(draft.paths ?? []).length} path(s){draft.watch ? ` · Watch ${draft.watch.durationSeconds} s` : ""}</div>
                <p className="sub">Validated by Gate's compiler, not saved. Review the assumptions and routing, then create it from the editor.</p>
                <div className="row">
                  <button type="button" className="primary" onClick={review} data-testid="agent-review">Review in editor</button>
                  <button type="button" onClick={() => setAgent({ draft: null })} data-testid="agent-discard">Discard draft</button>
                </div>
              </div>
            ) : null}
            {full ? <div className="notice warn" data-testid="agent-full">This conversation has reached {MAX_MESSAGES} messages: start a new one (the draft is kept).</div> : null}
            <div ref={endRef} />
          </>
        ) : null}
      </div>
      {enabled ? (
        <form className="agent-foot" onSubmit={(e) => { e.preventDefault(); void send(); }}>
          <textarea value={text} onChange={(e) => setText(e.target.value)} rows={3} maxLength={16000} data-testid="agent-input"
            placeholder={agent.application ? "e.g. Limit SMS to 50 per second" : "Choose an application first"} disabled={!canWrite || full}
            onKeyDown={(e) => { if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) { e.preventDefault(); void send(); } }} aria-label="message to the AI agent" />
          <div className="row">
            <button type="submit" className="primary" disabled={!canWrite || agent.pending || full || !agent.application || !text.trim()} data-testid="agent-send">Send</button>
            <button type="button" onClick={() => { const app = agent.application; clearAgent(); setAgent({ open: true, application: app }); setError(null); }} disabled={!started && !draft} data-testid="agent-new">New conversation</button>
          </div>
        </form>
      ) : null}
    </aside>
  );
}
