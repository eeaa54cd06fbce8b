// Integration guide: producer, consumer and HTTP examples written from the
// graph's resolved queues and worker group (never from guesses).
import type { GraphView } from "../wire";
import { useQueryParam } from "../lib/router";
import { CopyButton, Snippet } from "../lib/ui";

export function Guide({ view }: { view: GraphView }) {
  const [created] = useQueryParam("created", "");
  const entries = view.nodes.filter((n) => n.ingressQueue);
  const exits = view.nodes.filter((n) => n.egressQueue);
  const scoped = view.nodes.flatMap((n) => n.budgets.filter((b) => b.scopeBy).map((b) => b.scopeBy!.replace(/^payload\./, "")));
  const sample = { id: "order-1", ...(scoped.length ? Object.fromEntries(scoped.map((f) => [f.split(".")[0], "acct-42"])) : {}) };
  const base = `/v1/apps/${view.application}/graphs/${view.graph}`;
  return (
    <div data-testid="guide">
      {created ? <div className="notice good" role="status" data-testid="created">Created {view.application}/{view.graph} (version {view.version}). Send work to the incoming queue and consume the outgoing one; Gate paces what passes between them.</div> : null}
      <p className="sub">Everything below uses the queues and worker group Gate resolved for this graph. The JavaScript examples use the QueenMQ client (<code>queen-mq</code>); Gate never mediates the pop: your workers consume the outgoing queue directly.</p>
      {entries.length === 0 ? <div className="notice warn">This graph has no entry node, so nothing can be sent to it.</div> : null}
      {entries.map((n) => (
        <section key={n.node} className="card" style={{ marginBottom: 12 }}>
          <h2>Send work to {n.node}</h2>
          <p className="small muted">Incoming queue <code data-testid="guide-ingress">{n.ingressQueue}</code><CopyButton text={n.ingressQueue} what="incoming queue" />{n.ingressOwnedByGate ? " (Gate-owned)" : " (yours)"}. The partition is yours and is kept at every hop: use the account or key whose order matters.</p>
          <h3>JavaScript producer</h3>
          <Snippet text={`import { Queen } from 'queen-mq'

const queen = new Queen({ url: process.env.QUEEN_URL })   // the broker Gate uses

await queen.queue('${n.ingressQueue}').partition('acct-42').push({
  data: ${JSON.stringify(sample)},
})`} />
          {n.httpPush ? <>
            <h3>HTTP (gate-api front door)</h3>
            <Snippet testid="guide-http" text={`curl -sS -X POST "$GATE_URL${base}/nodes/${n.node}/push" \\
  -H 'Content-Type: application/json' \\
  -d '${JSON.stringify({ partition: "acct-42", payload: sample })}'
# GATE_URL is gate-api's GATE_BIND (default http://localhost:8788)`} />
          </> : <p className="small muted">HTTP push is off for this node (its incoming queue is yours); push with your SDK, or declare <code>"http": true</code>.</p>}
        </section>
      ))}
      {exits.map((n) => (
        <section key={n.node} className="card" style={{ marginBottom: 12 }}>
          <h2>Consume what {n.node} admits</h2>
          <p className="small muted">Outgoing queue <code data-testid="guide-egress">{n.egressQueue}</code><CopyButton text={n.egressQueue} what="outgoing queue" />{n.egressGroup ? <>, worker group <code data-testid="guide-group">{n.egressGroup}</code></> : " (no group declared: the queue-level figure counts as worker backlog)"}.</p>
          <h3>JavaScript consumer</h3>
          <Snippet text={`import { Queen } from 'queen-mq'

const queen = new Queen({ url: process.env.QUEEN_URL })

await queen.queue('${n.egressQueue}')${n.egressGroup ? `.group('${n.egressGroup}')` : ""}
  .consume(async (msg) => {
    const res = await callVendor(msg.data)
    if (res.status === 429) {
      // The vendor said slow down: spend ${n.node}'s window for Retry-After seconds.
      await fetch(process.env.GATE_URL + '${base}/nodes/${n.node}/backoff', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ retryAfterSeconds: Number(res.headers.get('retry-after')) || 30 }),
      })
      throw new Error('throttled')   // not acked: the lease redelivers it
    }
  })`} />
          <h3>Report the vendor's answer and the call's real cost</h3>
          <p className="small muted">Where a call's cost is known only after it (an LLM call's tokens), settle it: what the estimate over-charged goes back to the window it was charged in; observe feeds budgets that follow the vendor's rate-limit headers.</p>
          <Snippet text={`// inside consume(async (msg) => { … }), after the vendor answered
const post = (path, body) => fetch(process.env.GATE_URL + '${base}/nodes/' + path, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
})
await post('${n.node}/observe', { status: res.status, headers: Object.fromEntries(res.headers) })
await post('${n.node}/settle', { message: { transactionId: msg.transactionId, data: msg.data }, actualCost: usage })`} />
          <Snippet text={`curl -sS -X POST "$GATE_URL${base}/nodes/${n.node}/settle" -H 'Content-Type: application/json' \\
  -d '{"message":{"transactionId":"<as popped>","data":<as popped, with its _gate>},"actualCost":812}'`} />
          <h3>HTTP: report a vendor throttle, lift it early</h3>
          <Snippet text={`curl -sS -X POST "$GATE_URL${base}/nodes/${n.node}/backoff" -H 'Content-Type: application/json' -d '{"retryAfterSeconds":30}'
curl -sS -X DELETE "$GATE_URL${base}/nodes/${n.node}/backoff"
curl -sS "$GATE_URL${base}/nodes/${n.node}/eta"   # how long the backlog will wait`} />
        </section>
      ))}
    </div>
  );
}
