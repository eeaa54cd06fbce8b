// A console a team can trust with live graphs (issue 25), in a real
// browser against the real stack: create means create, every save is
// reviewed through the server's dry run, an overtaken edit says who and
// when, warnings stay visible, Back walks the wizard, delete and backoff
// ask first, the history restores, and a broker outage reads "unknown".
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { apiCall, assertAccessible, cleanPage, liveSuite, shot, until } from "./lib.mjs";

const live = await liveSuite();
const app = `sf${Date.now().toString(36).slice(-5)}`;

/** A one-node target document. */
const target = (count, queue, { version = 1, timeMs = 1000 } = {}) => ({
  version, counters: { windowSeconds: 60 },
  nodes: { limit: { ingress: true, budgets: [{ id: "global", count, timeMs }], egress: { queue, group: "workers" } } },
  paths: [{ name: "main", nodes: ["limit"] }],
});
const put = async (name, doc) => {
  const r = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/${name}`, doc);
  assert.equal(r.status, 200, r.text);
  return r.json;
};
// Read through the process that wrote last: each process's catalogue
// follows another's write on its next refresh. The test's own PUTs go to
// gate-api; after a write in the browser, read through the console.
const get = (name, via = live.stack.api) => apiCall(via, "GET", `/v1/apps/${app}/graphs/${name}`);

describe("a console a team can trust with live graphs", { skip: live.skip, timeout: 900000 }, () => {
  live.start({
    // A broker a test left down is brought back up before the stack stops.
    onStop: async (stack) => { if (stack?.brokerSwitch) await fetch(stack.brokerSwitch + "/up", { method: "POST" }).catch(() => {}); },
  });

  const open = async (base, path, opts) => {
    const p = await cleanPage(live.browser, opts);
    await p.page.goto(base + path);
    return p;
  };

  test("the wizard over an existing name says it exists, links to it, and the live target is untouched", async () => {
    await put("payments", target(5, `${app}.payments.out`));
    const p = await open(live.stack.console, "/targets/new");
    const pg = p.page;
    await pg.getByTestId("w-application").fill(app);
    await pg.getByTestId("w-name").fill("payments");
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("w-egress").fill(`${app}.other.out`);
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("budget-count").fill("100");
    await pg.getByTestId("w-next").click();
    p.allow(/status of 412/);
    await pg.getByTestId("w-create").click();
    const exists = pg.getByTestId("name-exists");
    await exists.waitFor();
    assert.match(await exists.innerText(), new RegExp(`${app}/payments exists already`));
    assert.match(await exists.innerText(), /Nothing was stored/);
    assert.equal(await exists.getByRole("link").getAttribute("href"), `/graphs/${app}/payments`);
    assert.equal(await pg.evaluate(() => document.activeElement?.getAttribute("data-testid")), "name-exists", "the refusal takes the focus by the button");
    const v = await get("payments");
    assert.equal(v.json.version, 1);
    assert.equal(v.json.nodes[0].budgets[0].count, 5, "the wizard replaced the live limit");
    assert.equal(v.json.nodes[0].egressQueue, `${app}.payments.out`, "the wizard replaced the live queue");
    await shot(pg, "safe-wizard-name-exists");
    await assertAccessible(pg, "the wizard's name-exists refusal");
    // Leaving the typed work asks first (it stays in this tab); go.
    pg.once("dialog", (d) => { void d.accept(); });
    await exists.getByRole("link").click();
    await pg.waitForURL(`**/graphs/${app}/payments`);
    assert.equal(await pg.title(), `Gate · ${app}/payments · Detail`);
    p.assertClean();
    await p.close();
  });

  test("New graph over an existing name is refused the same way: no version is raised, nothing is replaced", async () => {
    const p = await open(live.stack.console, "/graphs/new");
    const pg = p.page;
    await pg.getByTestId("f-application").fill(app);
    await pg.getByTestId("f-graph").fill("payments");
    await pg.getByTestId("egress-queue").fill(`${app}.x.out`);
    // The draft's own dry run (the form's hints) compares against what is stored: 409 here.
    p.allow(/status of 409/);
    p.allow(/status of 412/);
    await pg.getByTestId("save").click();
    await pg.getByTestId("name-exists").waitFor();
    assert.equal(await pg.getByTestId("f-version").inputValue(), "1", "the editor raised the version on its own");
    const v = await get("payments");
    assert.equal(v.json.version, 1);
    assert.equal(v.json.nodes.length, 1);
    assert.equal(v.json.nodes[0].budgets[0].count, 5);
    p.assertClean();
    await p.close();
  });

  test("a sub-second window: the hint says what is enforced, the review lists the warning, and it stays after saving", async () => {
    const p = await open(live.stack.console, "/targets/new");
    const pg = p.page;
    await pg.getByTestId("w-application").fill(app);
    await pg.getByTestId("w-name").fill("subsec");
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("w-egress").fill(`${app}.subsec.out`);
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("budget-count").fill("10");
    await pg.locator('[data-at="/nodes/limit/budgets/0/timeMs"]').fill("500");
    const hint = pg.getByTestId("window-hint");
    await until("the hint names what the server will enforce", async () => /enforced tighter, as 10 per 1 s/.test(await hint.innerText()), 15000);
    assert.doesNotMatch(await hint.innerText(), /^= 1 s$/);
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("w-create").click();
    const warnings = pg.getByTestId("review-warnings");
    await warnings.waitFor();
    assert.match(await warnings.innerText(), /window-sub-second/);
    assert.match(await pg.getByTestId("diff").innerText(), /enforced as 10 per 1 s/);
    await shot(pg, "safe-review-warnings");
    await assertAccessible(pg, "the review of a create");
    await pg.getByTestId("confirm-save").click();
    await pg.waitForURL(`**/graphs/${app}/subsec/guide?created=1`);
    const kept = pg.getByTestId("kept-warnings");
    await kept.waitFor();
    assert.match(await kept.innerText(), /window-sub-second/);
    await pg.getByRole("link", { name: "Detail" }).click();
    await pg.getByTestId("kept-warnings").waitFor();
    await pg.getByTestId("dismiss-warnings").click();
    assert.equal(await pg.getByTestId("kept-warnings").count(), 0);
    p.assertClean();
    await p.close();
  });

  test("an edit someone else overtook says who and when, shows the difference, and saves over it only when confirmed", async () => {
    await put("stale", target(5, `${app}.stale.out`));
    const p = await open(live.stack.console, `/graphs/${app}/stale/edit`);
    const pg = p.page;
    await pg.getByTestId("graph-form").waitFor();
    // Someone else changes it through the API while the editor is open.
    await put("stale", target(7, `${app}.stale.out`, { version: 2 }));
    await pg.getByTestId("f-version").fill("2");
    await pg.getByTestId("budget-count").fill("50");
    p.allow(/status of 412/);
    await pg.getByTestId("save").click();
    const overtaken = pg.getByTestId("overtaken");
    await overtaken.waitFor();
    const text = await overtaken.innerText();
    assert.match(text, /Someone else changed/);
    assert.match(text, /version 2/);
    assert.match(text, /stored by api/, `the 412 names who (history runs in the stack): ${text}`);
    assert.match(text, /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \((.* ago|now)\)/, "when, with its zone and a relative form");
    assert.match(await pg.getByTestId("diff").innerText(), /7 per 1 s.*→.*50 per 1 s/s, "the difference against their version");
    assert.equal((await get("stale")).json.nodes[0].budgets[0].count, 7, "nothing is stored before the confirmation");
    await shot(pg, "safe-overtaken");
    await assertAccessible(pg, "an overtaken edit");
    await pg.getByTestId("confirm-save").click();
    await pg.waitForURL(`**/graphs/${app}/stale?saved=1`);
    assert.equal((await get("stale", live.stack.console)).json.nodes[0].budgets[0].count, 50);
    p.assertClean();
    await p.close();
  });

  test("History: who changed what and when; a restore goes through its dry run and a confirmation", async () => {
    const p = await open(live.stack.console, `/graphs/${app}/stale/history`);
    const pg = p.page;
    await pg.getByTestId("history-table").waitFor();
    assert.equal(await pg.title(), `Gate · ${app}/stale · History`);
    const rows = pg.locator('[data-testid="history-table"] tr[data-revision]');
    assert.equal(await rows.count(), 3);
    const newest = await rows.first().innerText();
    assert.match(newest, /#3/);
    assert.match(newest, /dev@localhost|@/);
    assert.match(await rows.nth(1).innerText(), /api/);
    await pg.getByTestId("history-open-1").click();
    await pg.getByTestId("revision-diff").waitFor();
    assert.match(await pg.getByTestId("revision-diff").innerText(), /New graph at version 1/);
    await pg.getByTestId("restore").click();
    await pg.getByTestId("restore-review").waitFor();
    assert.match(await pg.getByTestId("restore-diff").innerText(), /50 per 1 s.*→.*5 per 1 s/s);
    assert.equal((await get("stale", live.stack.console)).json.nodes[0].budgets[0].count, 50, "the review stored something");
    await shot(pg, "safe-history-restore");
    await assertAccessible(pg, "the restore review");
    await pg.getByTestId("restore-confirm").click();
    await pg.waitForURL(`**/graphs/${app}/stale?saved=1`);
    const v = await get("stale", live.stack.console);
    assert.equal(v.json.nodes[0].budgets[0].count, 5);
    assert.equal(v.json.version, 3);
    p.assertClean();
    await p.close();
  });

  test("Back walks the wizard's steps and the typed work survives Back, a reload and leaving", async () => {
    const p = await open(live.stack.console, "/targets/new");
    const pg = p.page;
    await pg.getByTestId("w-application").fill(app);
    await pg.getByTestId("w-name").fill("backtrack");
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("w-egress").fill(`${app}.backtrack.out`);
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("wizard-step-3").waitFor();
    await pg.goBack();
    await pg.getByTestId("wizard-step-2").waitFor();
    assert.equal(await pg.getByTestId("w-egress").inputValue(), `${app}.backtrack.out`);
    await pg.goBack();
    await pg.getByTestId("wizard-step-1").waitFor();
    assert.equal(await pg.getByTestId("w-name").inputValue(), "backtrack");
    await pg.reload();
    await pg.getByTestId("wizard-step-1").waitFor();
    assert.equal(await pg.getByTestId("w-name").inputValue(), "backtrack", "a reload lost the draft");
    await pg.goForward();
    await pg.getByTestId("wizard-step-2").waitFor();
    assert.equal(await pg.getByTestId("w-egress").inputValue(), `${app}.backtrack.out`);
    // Leaving through a link asks first; dismissing stays.
    let asked = "";
    pg.once("dialog", (d) => { asked = d.message(); void d.dismiss(); });
    await pg.getByRole("link", { name: "Graphs", exact: true }).click();
    await until("the leave question", async () => asked, 5000);
    assert.match(asked, /Leave New target without creating it/);
    assert.match(pg.url(), /\/targets\/new/);
    p.assertClean();
    await p.close();
  });

  test("Apply and Lift backoff ask first; the reason is recorded in the annotation, and the lists show the hold", async () => {
    await put("held", target(20, `${app}.held.out`));
    const p = await open(live.stack.console, `/graphs/${app}/held`);
    const pg = p.page;
    await pg.getByTestId("backoff-none").waitFor();
    await pg.getByTestId("backoff-seconds").fill("300");
    await pg.getByTestId("backoff").click();
    const confirm = pg.getByTestId("backoff-confirm");
    await confirm.waitFor();
    assert.match(await confirm.innerText(), /Hold every path through limit for 300 s\?/);
    assert.equal((await get("held")).json.nodes[0].breaker, null, "one click held the node");
    await pg.getByTestId("backoff-reason").fill("vendor 429 storm, INC-7");
    await shot(pg, "safe-backoff-confirm");
    await assertAccessible(pg, "the backoff confirmation");
    await pg.getByTestId("backoff-confirm-button").click();
    await pg.getByTestId("backoff-active").waitFor();
    await pg.getByTestId("held-badge").waitFor();
    const tl = await until("the backoff annotation", async () => {
      const r = await apiCall(live.stack.api, "GET", `/api/apps/${app}/graphs/held/timeline?minutes=60`);
      return r.json?.events?.find((e) => e.change.label === "Backoff applied") ?? null;
    }, 15000);
    assert.equal(tl.change.reason, "vendor 429 storm, INC-7");
    assert.equal(tl.change.by, live.stack.admin);
    assert.equal(tl.change.seconds, 300);

    // The lists show the hold without opening the graph.
    await pg.goto(live.stack.console + `/targets?q=${app}/held`);
    await pg.locator('[data-testid="targets-table"] [data-testid="held-badge"]').waitFor();
    assert.match(await pg.locator('[data-testid="targets-table"] [data-testid="held-badge"]').innerText(), /backoff: limit/);
    // The overview counts it (its figures are at most 5 s old, the page polls) and links to the held graphs.
    await pg.goto(live.stack.console + "/");
    const heldStat = pg.getByTestId("stat-held").getByRole("link");
    await until("the overview's held count", async () => /^[1-9]/.test((await heldStat.innerText().catch(() => "")).trim()) || null, 20000);
    await shot(pg, "safe-overview-counts");
    await heldStat.click();
    await pg.waitForURL(/\/targets\?state=held$/);
    await pg.locator('[data-testid="targets-table"] a', { hasText: `${app}/held` }).waitFor();
    assert.equal(await pg.getByTestId("filter-state").inputValue(), "held");

    await pg.goto(live.stack.console + `/graphs/${app}/held`);
    await pg.getByTestId("lift").click();
    await pg.getByTestId("backoff-confirm").waitFor();
    assert.ok((await get("held")).json.nodes[0].breaker, "one click lifted the hold");
    await pg.getByTestId("backoff-reason").fill("vendor recovered");
    await pg.getByTestId("backoff-confirm-button").click();
    await pg.getByTestId("backoff-none").waitFor();
    assert.equal((await get("held")).json.nodes[0].breaker, null);
    const lifted = await until("the lift annotation", async () => {
      const r = await apiCall(live.stack.api, "GET", `/api/apps/${app}/graphs/held/timeline?minutes=60`);
      return r.json?.events?.find((e) => e.change.label === "Backoff lifted") ?? null;
    }, 15000);
    assert.equal(lifted.change.reason, "vendor recovered");
    p.assertClean();
    await p.close();
  });

  test("Delete graph asks for the typed name, deletes exactly what is shown, and says so", async () => {
    await put("doomed", target(3, `${app}.doomed.out`));
    const p = await open(live.stack.console, `/graphs/${app}/doomed`);
    const pg = p.page;
    await pg.getByTestId("delete-graph").click();
    const button = pg.getByTestId("delete-confirm-button");
    assert.equal(await button.isDisabled(), true);
    await pg.getByTestId("delete-typed").fill(`${app}/doome`);
    assert.equal(await button.isDisabled(), true, "a wrong name enables Delete");
    await pg.getByTestId("delete-typed").fill(`${app}/doomed`);
    assert.equal(await button.isDisabled(), false);
    await shot(pg, "safe-delete-confirm");
    await assertAccessible(pg, "the delete confirmation");
    await button.click();
    await pg.waitForURL(`**/graphs?deleted=*`);
    await pg.getByTestId("deleted-note").waitFor();
    assert.equal((await get("doomed", live.stack.console)).status, 404);
    p.assertClean();
    await p.close();
  });

  test("axe-core: no serious or critical accessibility violation on any page, in both themes", async () => {
    const watching = target(10, `${app}.observed.out`);
    watching.nodes.limit.budgets = [];
    watching.watch = { durationSeconds: 900 };
    await put("observed", watching);
    const pages = ["/", "/targets", "/targets/new", "/targets/new?step=2", "/targets/new?step=3", "/targets/new?step=4", "/graphs", "/graphs/new",
      ...["", "/guide", "/why", "/traffic", "/history", "/edit", "/clone"].map((s) => `/graphs/${app}/payments${s}`),
      `/graphs/${app}/observed`, `/graphs/${app}/observed/watch`];
    const failures = [];
    for (const theme of ["light", "dark"]) {
      const p = await cleanPage(live.browser, { theme });
      for (const path of pages) {
        await p.page.goto(live.stack.console + path);
        await p.page.locator("main h1").first().waitFor();
        await p.page.waitForLoadState("networkidle").catch(() => {});
        try { await assertAccessible(p.page, `${theme} ${path}`); } catch (e) { failures.push(e.message); }
      }
      p.assertClean();
      await p.close();
    }
    assert.deepEqual(failures, []);
  });

  test("broker down: a banner on every page, 'unknown' where a number cannot be read, never 'none' or 'enforcing'", async () => {
    const p = await open(live.stack.brokerDown, `/targets?q=${app}/payments`);
    const pg = p.page;
    const row = pg.locator('[data-testid="targets-table"] tbody tr').first();
    await until("the target listed while the broker answers", async () => /payments/.test(await row.innerText()), 30000);
    assert.doesNotMatch(await row.innerText(), /unknown/);
    const down = await fetch(live.stack.brokerSwitch + "/down", { method: "POST" });
    assert.equal(down.status, 200);
    p.allow(/status of 50[234]/);
    p.allow(/Failed to load resource/);
    await pg.getByTestId("broker-banner").waitFor({ timeout: 30000 });
    await until("the row reads unknown", async () => /unknown/.test(await row.innerText()), 30000);
    assert.doesNotMatch(await row.innerText(), /none/, "a target reads none while the broker is down");
    await shot(pg, "safe-broker-down-targets");
    await pg.goto(live.stack.brokerDown + `/graphs/${app}/payments`);
    await pg.getByTestId("broker-banner").waitFor({ timeout: 30000 });
    await pg.getByTestId("state-unknown").waitFor({ timeout: 30000 });
    assert.doesNotMatch(await pg.getByTestId("graph-state").innerText(), /enforcing/);
    await pg.getByTestId("live-unknown").waitFor();
    await pg.getByTestId("backoff-unknown").waitFor();
    assert.equal(await pg.getByTestId("backoff-none").count(), 0, "Detail says 'No backoff' while the broker is down");
    await shot(pg, "safe-broker-down-detail");
    await assertAccessible(pg, "Detail with the broker down");
    await pg.goto(live.stack.brokerDown + "/graphs");
    await pg.getByTestId("broker-banner").waitFor({ timeout: 30000 });
    const up = await fetch(live.stack.brokerSwitch + "/up", { method: "POST" });
    assert.equal(up.status, 200);
    await pg.waitForFunction(() => !document.querySelector('[data-testid="broker-banner"]'), null, { timeout: 30000 });
    p.assertClean();
    await p.close();
  });
});
