// Shadow limits in a real browser against the real stack (issue 27): a
// writer runs a candidate from the detail page, the relay keeps forwarding
// everything under the enforced limit while gate-recorder evaluates the
// candidate, the node panel says "if enforced: …", and Enforce turns the
// candidate into the enforced limits in one edit through the dry run's
// review and If-Match. A per-account candidate is judged per account.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { apiCall, assertAccessible, cleanPage, liveSuite, shot, until } from "./lib.mjs";

const live = await liveSuite();
const app = `sh${Date.now().toString(36).slice(-5)}`;

describe("shadow limits", { skip: live.skip, timeout: 600000 }, () => {
  live.start();

  test("a candidate runs beside the enforced limit, says 'if enforced', and is enforced through the dry run", async () => {
    const doc = {
      version: 1, counters: { windowSeconds: 60 },
      nodes: { limit: { ingress: true, budgets: [{ id: "global", count: 1000, timeMs: 1000 }], egress: { queue: `${app}.calls.out`, group: "workers" } } },
      paths: [{ name: "main", nodes: ["limit"] }],
    };
    const r = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/calls`, doc);
    assert.equal(r.status, 200, r.text);

    const p = await cleanPage(live.browser);
    const pg = p.page;
    await pg.goto(`${live.stack.console}/graphs/${app}/calls`);
    await pg.getByTestId("shadow-none").waitFor();
    // Run a candidate of 5 a second from the page (the document's own budget syntax).
    await pg.getByText("Run a candidate as a shadow…").click();
    await pg.getByTestId("shadow-editor").fill(JSON.stringify({ nodes: { limit: { budgets: [{ id: "global", count: 5, timeMs: 1000 }] } } }));
    await pg.getByTestId("set-shadow").click();
    await pg.getByTestId("shadow-table").waitFor();
    assert.match(await pg.getByTestId("shadow-sentence").innerText(), /if enforced: not evaluated yet/);

    // The relays start recording a graph's seconds at their next history
    // flush after the candidate is set (every 10 s).
    await new Promise((r) => setTimeout(r, 12000));
    // 60 items through the front door: the enforced 1,000/s forwards them all at once.
    for (let i = 0; i < 60; i++) {
      const pr = await apiCall(live.stack.api, "POST", `/v1/apps/${app}/graphs/calls/nodes/limit/push`, { partition: `p${i % 4}`, payload: { n: i } });
      assert.equal(pr.status, 200, pr.text);
    }
    await until("the relay forwarded all 60 items", async () => {
      const v = await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/calls`);
      return v.json?.stages?.reduce((a, s) => a + s.counters.forwarded, 0) >= 60;
    }, 60000);
    const view = await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/calls`);
    for (const s of view.json.stages) {
      assert.equal(s.counters.deferred + s.counters.released, 0, "a shadow of 5/s made the relay defer or release items");
    }

    // gate-recorder evaluates each minute about half a minute after it ends.
    const sh = await until("gate-recorder evaluated the candidate", async () => {
      const g = await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/calls/shadow`);
      const n = g.json?.nodes?.[0];
      return n && n.ifEnforced.arrived >= 60 ? g.json : null;
    }, 180000);
    assert.ok(sh.nodes[0].ifEnforced.delayed > 0, `60 items at 5/s delayed none: ${JSON.stringify(sh.nodes[0])}`);
    await pg.reload();
    const note = pg.getByTestId("shadow-note");
    await note.waitFor();
    assert.match(await note.innerText(), /if enforced: \d+ of \d+ items delayed/);
    await shot(pg, "shadow-detail-1440-light");
    await assertAccessible(pg, "the detail page with a shadow");

    // Enforce: the dry run's review first, nothing stored until Confirm.
    await pg.getByTestId("enforce-shadow").click();
    const review = pg.getByTestId("review");
    await review.waitFor();
    assert.match(await review.innerText(), /Review before enforce/);
    assert.equal((await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/calls`)).json.version, 1, "Enforce stored before the review");
    await shot(pg, "shadow-enforce-review-1440-light");
    await pg.getByTestId("confirm-save").click();
    await until("the candidate is the enforced limit", async () => {
      const v = await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/calls`);
      return v.json?.version === 2 && v.json.nodes[0].budgets[0].count === 5;
    }, 30000);
    await until("the shadow is gone once enforced", async () => {
      const g = await apiCall(live.stack.console, "GET", `/api/apps/${app}/graphs/calls/shadow`);
      return g.status === 200 && g.json.set === false;
    }, 30000);
    p.assertClean();
    await p.close();
  });

  test("a per-account candidate is judged per account on live traffic, and a field no item carries is named", async () => {
    const doc = {
      version: 1,
      nodes: { limit: { ingress: true, budgets: [{ id: "global", count: 1000, timeMs: 1000 }], egress: { queue: `${app}.acct.out`, group: "workers" } } },
      paths: [{ name: "main", nodes: ["limit"] }],
    };
    const r = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/acct`, doc);
    assert.equal(r.status, 200, r.text);
    // 5 a second per account; per-region scopes by a field no item carries.
    const cand = { nodes: { limit: { budgets: [
      { id: "global", count: 1000, timeMs: 1000 },
      { id: "per-account", count: 5, timeMs: 1000, scopeBy: "payload.account" },
      { id: "per-region", count: 1, timeMs: 1000, scopeBy: "payload.region" },
    ] } } };
    const put = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/acct/shadow`, cand);
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.json.unsupported, [], "a scoped candidate is listed as unsupported");
    // The relays learn what to record at their next history flush (every 10 s).
    await new Promise((r) => setTimeout(r, 12000));
    // Account a: 30 items (6× its limit if they land in one second); b: 3, under it.
    const pushes = [];
    for (let i = 0; i < 33; i++) {
      const account = i < 30 ? "a" : "b";
      pushes.push(apiCall(live.stack.api, "POST", `/v1/apps/${app}/graphs/acct/nodes/limit/push`, { partition: account, payload: { account, n: i } }));
    }
    for (const pr of await Promise.all(pushes)) assert.equal(pr.status, 200, pr.text);
    const sh = await until("gate-recorder evaluated the per-account candidate", async () => {
      const g = await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/acct/shadow`);
      const n = g.json?.nodes?.[0];
      return n && n.ifEnforced.arrived >= 33 ? g.json : null;
    }, 180000);
    const n = sh.nodes[0];
    // Only a's items can wait: its first 5 pass at once, b's 3 are under the limit.
    assert.ok(n.ifEnforced.delayed > 0 && n.ifEnforced.delayed <= 25, `delayed ${n.ifEnforced.delayed}, want 1..25 (a's only): ${JSON.stringify(n)}`);
    assert.equal(n.ifEnforced.approximate, 0, `items judged without their account: ${JSON.stringify(n)}`);
    assert.ok(n.notes.some((t) => /budget 'per-region' scopes by 'payload.region', but none of the 33 items/.test(t)), `notes ${JSON.stringify(n.notes)}`);
    const p = await cleanPage(live.browser);
    await p.page.goto(`${live.stack.console}/graphs/${app}/acct`);
    const notes = p.page.getByTestId("shadow-notes");
    await notes.waitFor();
    assert.match(await notes.innerText(), /per-region/);
    p.assertClean();
    await p.close();
    await apiCall(live.stack.api, "DELETE", `/v1/apps/${app}/graphs/acct/shadow`);
  });
});
