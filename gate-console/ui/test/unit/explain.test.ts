// The explain box asks by transaction id alone, or by scope, op and
// partition: never both (the server refuses a transaction id beside them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { explainQuery } from "../../src/lib/explain";

test("a transaction id is asked alone, trimmed", () => {
  assert.deepEqual(explainQuery({ txn: " order-1 ", scope: "L-9", op: "listing.delete", partition: "p7", scoped: true }), { transactionId: "order-1" });
});

test("without one, scope (on a node that counts per value), op and partition", () => {
  assert.deepEqual(explainQuery({ txn: " ", scope: "L-9", op: "listing.delete", partition: " p7 ", scoped: true }), { scope: "L-9", op: "listing.delete", partition: "p7" });
  assert.deepEqual(explainQuery({ txn: "", scope: "L-9", op: "", partition: "", scoped: false }), {});
  assert.deepEqual(explainQuery({ txn: "", scope: "", op: "", partition: "", scoped: true }), { scope: "" });
});
