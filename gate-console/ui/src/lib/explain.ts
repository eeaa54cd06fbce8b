// The "Why is this item waiting?" box's question: by transaction id (the
// txn the item was pushed with) alone, since the server reads the item's
// scope value, op and partition from the push door's record; else by
// scope value, op and partition, each left out when empty.

export type ExplainForm = { txn: string; scope: string; op: string; partition: string; scoped: boolean };

export type ExplainQuery = { transactionId?: string; scope?: string; op?: string; partition?: string };

export function explainQuery(f: ExplainForm): ExplainQuery {
  const txn = f.txn.trim();
  if (txn) return { transactionId: txn };
  const q: ExplainQuery = {};
  if (f.scoped) q.scope = f.scope;
  if (f.op) q.op = f.op;
  if (f.partition.trim()) q.partition = f.partition.trim();
  return q;
}
