// The console in a real browser against the real stack (miniqueen, NATS,
// gate-api, gate-relay, gate-console; see ../../harness). Every page must stay
// free of console errors, unhandled rejections and CSP violations; the only
// failed requests tolerated are the refusals a test provokes and asserts.
// gate-recorder runs in the stack (a fresh PostgreSQL schema per run, a 1 s
// flush), so Watch, Traffic over time, Try a limit and the denials read
// real history.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { apiCall, cleanPage, liveSuite, num, shot, until } from "./lib.mjs";

const live = await liveSuite();
const app = `ui${Date.now().toString(36).slice(-5)}`;

describe("console in chromium", { skip: live.skip, timeout: 900000 }, () => {
  live.start();

  const open = async (base, path, opts) => {
    const p = await cleanPage(live.browser, opts);
    await p.page.goto(base + path);
    return p;
  };

  test("dev-bypass sign-in: the banner names the identity, an admin sees write controls", async () => {
    const p = await open(live.stack.console, "/");
    await p.page.getByTestId("dev-banner").waitFor();
    assert.match(await p.page.getByTestId("dev-banner").innerText(), new RegExp(live.stack.admin.replace(".", "\\.")));
    assert.equal(await p.page.getByTestId("role").innerText(), "admin");
    await p.page.getByTestId("stat-broker").getByText("reachable").waitFor();
    assert.ok(await p.page.getByRole("link", { name: "New target" }).count() > 0);
    p.assertClean();
    await p.close();
  });

  test("the stack records history: gate-recorder runs on this run's own schema", () => {
    assert.match(live.stack.history, /gate-recorder runs|5432/, `no history in the harness: ${live.stack.history}`);
    assert.match(live.stack.schema, /^ui_\d+_\d+$/);
  });

  // A Watch graph fed through the front door early. The Watch summary
  // counts complete minutes from the first whole minute after
  // watch.startedAt, so the items go in just after that minute starts (in
  // the background, while the other tests run) and the Watch test reads
  // them once that minute is over.
  const trialItems = 40;
  let trialFed;
  test("a Watch graph takes items through gate-api's front door", async () => {
    const w = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/trial`, { version: 3, counters: { windowSeconds: 60 }, watch: { durationSeconds: 900 },
      nodes: { api: { ingress: true, budgets: [], egress: { queue: `${app}.trial.out`, group: "trialists" } } }, paths: [{ name: "main", nodes: ["api"] }] });
    assert.equal(w.status, 200, w.text);
    const v = await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/trial`);
    const startedAt = v.json.spec?.watch?.startedAt;
    assert.ok(Number.isInteger(startedAt), `gate-api stamps watch.startedAt: ${v.text}`);
    const firstMinute = Math.ceil(startedAt / 60000) * 60000;
    trialFed = (async () => {
      await new Promise((r) => setTimeout(r, Math.max(0, firstMinute + 1000 - Date.now())));
      for (let i = 0; i < trialItems; i++) {
        const r = await apiCall(live.stack.api, "POST", `/v1/apps/${app}/graphs/trial/nodes/api/push`, { partition: `p${i % 4}`, payload: { n: i } });
        assert.equal(r.status, 200, r.text);
      }
    })();
    trialFed.catch(() => {});
  });

  test("sign-in through the OIDC provider (mockoidc): signed out → Sign in → provider → back, signed in as the provider's user", async () => {
    const p = await open(live.stack.signin, "/targets");
    const pg = p.page;
    // Signed out: the console says so and offers the sign-in link (the 401 is the point).
    p.allow(/status of 401/);
    await pg.getByTestId("error-state").waitFor();
    assert.equal(await pg.getByTestId("dev-banner").count(), 0, "the sign-in console must not use the dev bypass");
    await pg.getByRole("link", { name: "Sign in" }).click();
    await pg.waitForURL(`${live.stack.signin}/targets`, { timeout: 30000 });
    await pg.getByTestId("role").waitFor();
    assert.equal(await pg.getByTestId("role").innerText(), "admin");
    assert.equal(await pg.locator("header .email, nav .email, .email").first().innerText(), live.stack.signinUser);
    await pg.getByTestId("targets-table").waitFor();
    const me = await pg.evaluate(async () => (await fetch("/api/me")).json());
    assert.equal(me.email, live.stack.signinUser);
    p.assertClean();
    await p.close();
  });

  test("wizard → target created → integration guide → front-door pushes show in the live counters", async () => {
    const p = await open(live.stack.console, "/targets/new");
    const pg = p.page;
    await pg.getByTestId("w-application").fill(app);
    await pg.getByTestId("w-name").fill("mailer");
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("w-egress").fill(`${app}.mailer.out`);
    await pg.getByTestId("w-next").click();
    await pg.getByTestId("w-template-per-account").check();
    // The per-account template keeps its global ceiling, marked assumed.
    assert.equal(await pg.getByTestId("budget-count").count(), 2);
    assert.ok(await pg.getByText("assumed", { exact: true }).count() >= 2);
    await pg.getByTestId("w-template-global").check();
    await pg.getByTestId("budget-count").fill("20");
    await pg.getByTestId("w-next").click();
    assert.match(await pg.getByTestId("w-review-json").innerText(), /"count": 20/);
    await pg.getByTestId("w-create").click();
    // Every create is reviewed first: the server's dry run of a new graph.
    await pg.getByTestId("review").waitFor();
    assert.match(await pg.getByTestId("diff").innerText(), /New graph at version 1/);
    await pg.getByTestId("confirm-save").click();
    await pg.waitForURL(`**/graphs/${app}/mailer/guide?created=1`);
    await pg.getByTestId("created").waitFor();
    const ingress = await pg.getByTestId("guide-ingress").first().innerText();
    assert.match(ingress, /mailer/);
    assert.equal(await pg.getByTestId("guide-egress").first().innerText(), `${app}.mailer.out`);
    assert.equal(await pg.getByTestId("guide-group").first().innerText(), "workers");
    assert.match(await pg.getByTestId("guide-http").innerText(), new RegExp(`/v1/apps/${app}/graphs/mailer/nodes/limit/push`));

    await pg.getByRole("link", { name: "Detail" }).click();
    await pg.getByTestId("stages-table").waitFor();
    await pg.getByText(/streaming stage counters/).waitFor({ timeout: 20000 });
    for (let i = 0; i < 12; i++) {
      const r = await apiCall(live.stack.api, "POST", `/v1/apps/${app}/graphs/mailer/nodes/limit/push`, { partition: "p1", payload: { accountId: "a", n: i } });
      assert.equal(r.status, 200, r.text);
    }
    await pg.waitForFunction(() => Number(document.querySelector('[data-testid="forwarded"]')?.textContent?.replace(/,/g, "")) >= 12, null, { timeout: 30000 });
    p.assertClean();
    await p.close();
  });

  test("a viewer sees no write controls, and the server refuses the viewer's write", async () => {
    const p = await open(live.stack.viewer, `/graphs/${app}/mailer`);
    await p.page.getByTestId("node-panel").waitFor();
    assert.equal(await p.page.getByTestId("role").innerText(), "viewer");
    assert.equal(await p.page.getByTestId("backoff").count(), 0, "viewer sees Apply backoff");
    assert.equal(await p.page.getByTestId("lift").count(), 0);
    await p.page.goto(live.stack.viewer + "/targets");
    await p.page.getByTestId("targets-table").waitFor();
    assert.equal(await p.page.getByRole("link", { name: "New target" }).count(), 0, "viewer sees New target");
    await p.page.goto(live.stack.viewer + `/graphs/${app}/mailer/edit`);
    await p.page.getByText(/Read-only/).waitFor();
    assert.equal(await p.page.getByTestId("save").count(), 0);
    p.allow(/status of 403/);
    const status = await p.page.evaluate(async (a) => (await fetch(`/v1/apps/${a}/graphs/mailer/nodes/limit/backoff`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"retryAfterSeconds":5}' })).status, app);
    assert.equal(status, 403);
    p.assertClean();
    await p.close();
  });

  test("edit in the form, switch to JSON, change, switch back: nothing is lost; the version is bumped where required", async () => {
    const p = await open(live.stack.console, `/graphs/${app}/mailer/edit`);
    const pg = p.page;
    // The draft's dry run (the form's enforced-numbers hint) is refused with
    // 409 version-bump once the budget is renamed, before the save says so.
    p.allow(/status of 409/);
    await pg.getByTestId("graph-form").waitFor();
    await pg.getByTestId("budget-count").first().fill("30");
    await pg.getByTestId("view-json").click();
    const text = await pg.getByTestId("json-editor").inputValue();
    const doc = JSON.parse(text);
    assert.equal(doc.nodes.limit.budgets[0].count, 30);
    // In JSON: rename the budget (a new counter: the server needs a higher version) and add a cost field.
    doc.nodes.limit.budgets[0].id = "renamed";
    doc.nodes.limit.cost = { path: "payload.size", default: 1, max: 5 };
    await pg.getByTestId("json-editor").fill(JSON.stringify(doc, null, 2));
    await pg.getByTestId("view-form").click();
    await pg.getByTestId("graph-form").waitFor();
    assert.equal(await pg.getByTestId("budget-count").first().inputValue(), "30", "the form edit was lost");
    assert.equal(await pg.locator('[data-at="/nodes/limit/budgets/0/id"]').inputValue(), "renamed");
    assert.equal(await pg.locator('[data-at="/nodes/limit/cost/path"]').inputValue(), "payload.size");
    assert.equal(await pg.getByTestId("egress-queue").inputValue(), `${app}.mailer.out`);
    // The server needs a higher version for a renamed budget: the console
    // says so and offers to raise it; it never raises it on its own.
    await pg.getByTestId("save").click();
    await pg.getByTestId("raise-version").waitFor();
    assert.match(await pg.getByTestId("save-summary").innerText(), /version/);
    assert.equal((await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/mailer`)).json.version, 1, "a refused save stored something");
    await pg.getByTestId("raise-version").click();
    // The click's state update renders after it returns: wait for the form
    // to show the raised version before reading it (read at once, it raced).
    await pg.waitForFunction(() => document.querySelector('[data-testid="f-version"]')?.value === "2", null, { timeout: 10000 }).catch(() => {});
    assert.equal(await pg.getByTestId("f-version").inputValue(), "2");
    await pg.getByTestId("save").click();
    await pg.getByTestId("review").waitFor();
    assert.match(await pg.getByTestId("diff").innerText(), /Version 1 → 2/);
    await pg.getByTestId("confirm-save").click();
    await pg.waitForURL(`**/graphs/${app}/mailer?saved=1`);
    const v = await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/mailer`);
    assert.equal(v.json.version, 2, "the version was not bumped");
    assert.equal(v.json.nodes[0].budgets[0].id, "renamed");
    assert.equal(v.json.nodes[0].budgets[0].count, 30);
    p.assertClean();
    await p.close();
  });

  test("a rule refusal from the server is shown at the field it names", async () => {
    const p = await open(live.stack.console, `/graphs/${app}/mailer/edit`);
    const pg = p.page;
    await pg.getByTestId("graph-form").waitFor();
    await pg.getByTestId("budget-count").first().fill("5");
    await pg.locator('[data-at="/nodes/limit/budgets/0/subWindows"]').fill("10");
    p.allow(/status of 422/);
    await pg.getByTestId("save").click();
    const err = pg.locator('[data-testid="field-error"][data-error-at="/nodes/limit/budgets/0/subWindows"]');
    await err.waitFor();
    assert.match(await err.innerText(), /subwindow-fits/);
    assert.equal(await pg.locator('[data-at="/nodes/limit/budgets/0/subWindows"][aria-invalid="true"]').count(), 1);
    p.assertClean();
    await p.close();
  });

  test("clone: new name, version 1, Gate-owned ingress, a new outgoing queue required, then the guide", async () => {
    const p = await open(live.stack.console, `/graphs/${app}/mailer/clone`);
    const pg = p.page;
    await pg.getByTestId("clone-note").waitFor();
    assert.match(await pg.getByTestId("clone-note").innerText(), /outgoing queues for limit/);
    assert.equal(await pg.getByTestId("f-version").inputValue(), "1");
    assert.equal(await pg.getByTestId("save").isDisabled(), false);
    await pg.getByTestId("f-graph").fill("mailer-copy");
    // Blank outgoing queue: the schema check marks it before anything is sent.
    assert.equal(await pg.locator('[data-at="/nodes/limit/egress/queue"][aria-invalid="true"]').count(), 1);
    await pg.getByTestId("egress-queue").fill(`${app}.copy.out`);
    await pg.getByTestId("save").click();
    await pg.getByTestId("confirm-save").click();
    await pg.waitForURL(`**/graphs/${app}/mailer-copy/guide?created=1`);
    const v = await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/mailer-copy`);
    assert.equal(v.json.version, 1);
    assert.equal(v.json.nodes[0].egressQueue, `${app}.copy.out`);
    assert.equal(v.json.nodes[0].ingressOwnedByGate, true);
    p.assertClean();
    await p.close();
  });

  test("a backoff shows on the graph and lifting it clears it", async () => {
    const p = await open(live.stack.console, `/graphs/${app}/mailer`);
    const pg = p.page;
    await pg.getByTestId("backoff-none").waitFor();
    await pg.getByTestId("backoff-seconds").fill("120");
    await pg.getByTestId("backoff").click();
    await pg.getByTestId("backoff-confirm-button").click();
    await pg.getByTestId("backoff-active").waitFor();
    // The node page's explain box answers in the server's sentence: the
    // backoff holds the item, the backoff's spent counter binds.
    await pg.getByTestId("explain").click();
    const sentence = pg.getByTestId("explain-sentence");
    await sentence.waitFor();
    assert.match(await sentence.innerText(), /^Held by a backoff until .*waiting for .*: \d+ of \d+/);
    assert.equal(await pg.locator('[data-testid="explain-answer"] tr[data-binds="yes"]').count(), 1);
    // By transaction id: an item pushed with a txn is explained from the
    // push door's record of it, and the answer says where it was pushed.
    let v = await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/mailer`);
    const entry = v.json.nodes[0].node;
    const pushed = await apiCall(live.stack.console, "POST", `/v1/apps/${app}/graphs/mailer/nodes/${entry}/push`, { txn: "browser-txn-1", payload: { to: "a@example.com" } });
    assert.equal(pushed.status, 200, pushed.text);
    await pg.getByTestId("explain-txn").fill("browser-txn-1");
    await pg.getByTestId("explain").click();
    const item = pg.getByTestId("explain-item");
    await item.waitFor();
    assert.match(await item.innerText(), new RegExp(`^Item browser-txn-1: pushed to ${entry} at `));
    v = await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/mailer`);
    assert.ok(v.json.nodes[0].breaker && v.json.nodes[0].breaker.retryAfterSeconds === 120);
    // "Why is traffic waiting?" names the backoff, at its node.
    await pg.goto(live.stack.console + `/graphs/${app}/mailer/why`);
    const finding = pg.locator('[data-testid="findings"] li[data-kind="backoff"]');
    await finding.waitFor({ timeout: 30000 });
    assert.match(await finding.innerText(), /node limit/);
    await pg.goto(live.stack.console + `/graphs/${app}/mailer`);
    await pg.getByTestId("lift").click();
    await pg.getByTestId("backoff-confirm-button").click();
    await pg.getByTestId("backoff-none").waitFor();
    v = await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/mailer`);
    assert.equal(v.json.nodes[0].breaker, null);
    // Lifted: the finding is gone (the page polls every 5 s).
    await pg.goto(live.stack.console + `/graphs/${app}/mailer/why`);
    await pg.getByTestId("findings").waitFor();
    await pg.waitForFunction(() => !document.querySelector('[data-testid="findings"] li[data-kind="backoff"]'), null, { timeout: 30000 });
    p.assertClean();
    await p.close();
  });

  test("a scoped budget's limits per key show on the node page: the document's and the runtime ones, paged", async () => {
    const doc = {
      version: 1,
      nodes: { call: { ingress: { http: true }, egress: `${app}.tiers.out`, budgets: [
        { id: "global", count: 3000, timeMs: 60000, confidence: "assumed" },
        { id: "per-customer", count: 60, timeMs: 60000, subWindows: 6, scopeBy: "payload.customer", confidence: "assumed", keys: { "acme-enterprise": 600, "trial-7": 6 } },
      ] } },
      paths: [{ name: "main", nodes: ["call"] }],
    };
    let r = await apiCall(live.stack.console, "PUT", `/v1/apps/${app}/graphs/tiers`, doc);
    assert.equal(r.status, 200, r.text);
    for (let i = 0; i < 25; i++) {
      r = await apiCall(live.stack.console, "PUT", `/v1/apps/${app}/graphs/tiers/nodes/call/budgets/per-customer/keys/c-${String(i).padStart(2, "0")}`, { count: 100 + i });
      assert.equal(r.status, 200, r.text);
    }
    const p = await open(live.stack.console, `/graphs/${app}/tiers`);
    const pg = p.page;
    const rows = pg.locator('[data-testid="key-limits"] [data-testid="key-limit"]');
    await pg.getByTestId("key-limits").waitFor();
    await pg.waitForFunction(() => document.querySelectorAll('[data-testid="key-limits"] [data-testid="key-limit"]').length === 22, null, { timeout: 30000 });
    const first = await pg.getByTestId("key-limits").innerText();
    assert.match(first, /Every other value counts/);
    assert.match(first, /acme-enterprise/);
    assert.match(first, /c-00/);
    assert.doesNotMatch(first, /c-20/);
    await pg.getByTestId("key-limits-next").click();
    await pg.waitForFunction(() => document.querySelectorAll('[data-testid="key-limits"] [data-testid="key-limit"]').length === 5, null, { timeout: 30000 });
    assert.match(await rows.first().innerText(), /c-20/);
    p.assertClean();
    await p.close();
  });

  test("Traffic over time shows the annotation of a changing declare", async () => {
    // mailer went from v1 to v2 (a renamed budget) in the edit test: gate-api annotated it.
    const p = await open(live.stack.console, `/graphs/${app}/mailer/traffic`);
    const pg = p.page;
    const changes = pg.getByTestId("changes");
    await changes.waitFor({ timeout: 30000 });
    assert.match(await changes.innerText(), /v2/);
    const tl = await apiCall(live.stack.api, "GET", `/api/apps/${app}/graphs/mailer/timeline?minutes=60`);
    assert.equal(tl.status, 200, tl.text);
    assert.ok(tl.json.events.some((e) => e.change.version === 2), tl.text);
    assert.equal(await changes.locator("li").count(), tl.json.events.length);
    p.assertClean();
    await p.close();
  });

  test("recent denials on the graph are the relay's real denials", async () => {
    const w = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/tight`, { version: 1,
      nodes: { api: { ingress: true, budgets: [{ id: "tiny", count: 2, timeMs: 1000 }], egress: { queue: `${app}.tight.out`, group: "tighters" } } }, paths: [{ name: "main", nodes: ["api"] }] });
    assert.equal(w.status, 200, w.text);
    for (let i = 0; i < 30; i++) {
      const r = await apiCall(live.stack.api, "POST", `/v1/apps/${app}/graphs/tight/nodes/api/push`, { partition: "p1", payload: { n: i } });
      assert.equal(r.status, 200, r.text);
    }
    const traces = await until("a denial of tight in /api/traces", async () => {
      const t = await apiCall(live.stack.api, "GET", "/api/traces?limit=200");
      const mine = t.status === 200 ? t.json.filter((d) => d.application === app && d.graph === "tight") : [];
      return mine.length ? mine : null;
    }, 60000);
    assert.ok(traces.every((d) => d.outcome === "denied" && d.node === "api"));
    const p = await open(live.stack.console, `/graphs/${app}/tight`);
    const rows = p.page.locator('[data-testid="denials"] tr');
    await rows.first().waitFor({ timeout: 30000 });
    const first = await rows.first().innerText();
    assert.match(first, /api/);
    assert.match(first, /main/);
    assert.match(first, /denied/);
    assert.match(first, new RegExp(traces[0].budgetId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    p.assertClean();
    await p.close();
  });

  test("Watch → recorded items → Try a limit → whole graph (saved) → Configure limits, unsaved tight draft → whole graph simulates the draft → saved → enforcing", async () => {
    await trialFed;
    const p = await open(live.stack.console, `/graphs/${app}/trial/watch`);
    const pg = p.page;
    await pg.getByTestId("watch-table").waitFor({ timeout: 30000 });
    // The relay hands its samples over every 10 s, the recorder drains every
    // second, and the summary counts complete minutes: wait for all of them.
    await until(`the Watch summary shows the ${trialItems} items`, async () => {
      await pg.reload();
      await pg.getByTestId("watch-table").waitFor();
      return num(await pg.locator('[data-node="api"] [data-testid="watch-admitted"]').innerText()) === trialItems;
    }, 150000);
    const sum = await apiCall(live.stack.api, "GET", `/api/apps/${app}/graphs/trial/watch`);
    assert.equal(sum.json.nodes[0].traffic.admitted, trialItems, sum.text);
    assert.ok(sum.json.minutes >= 1);

    // Try a limit: 5 per second over the recording; the page shows what the server computed.
    // The summary can count the items (minute roll-ups) a moment before the
    // per-second samples a simulation replays are stored: wait for those first.
    const simURL = `/api/apps/${app}/graphs/trial/simulate?node=api&count=5&timeMs=1000&minutes=60`;
    await until(`the simulation replays the ${trialItems} recorded items`, async () => {
      const r = await apiCall(live.stack.api, "GET", simURL);
      if (r.status === 200 && r.json.items === trialItems) return true;
      // Thrown, not returned: a timeout then says what the route last
      // answered (fewer items: samples lost or late; more: counted twice).
      throw new Error(`HTTP ${r.status}, items ${r.json?.items} of ${trialItems}: ${r.text.slice(0, 400)}`);
    }, 60000);
    await pg.getByTestId("sim-count").fill("5");
    await pg.getByTestId("sim-run").click();
    await pg.getByTestId("sim-result").waitFor({ timeout: 30000 });
    const sim = await apiCall(live.stack.api, "GET", simURL);
    assert.equal(sim.status, 200, sim.text);
    assert.equal(sim.json.items, trialItems, sim.text);
    assert.ok(sim.json.delayedItems > 0, `40 items at 5/s must wait: ${sim.text}`);
    assert.equal(num(await pg.getByTestId("sim-items").locator(".value").innerText()), sim.json.items);
    assert.equal(num(await pg.getByTestId("sim-delayed").locator(".value").innerText()), sim.json.delayedItems);
    assert.equal(num(await pg.getByTestId("sim-peak").locator(".value").innerText()), sim.json.peakBacklog);
    // Delayed items with nothing left at the end: the page says how long the
    // longest waited and that none is left, never "drain time 0 s".
    assert.ok(sim.json.longestWaitSeconds > 0, `40 items at 5/s: the longest wait is over 0 s: ${sim.text}`);
    assert.ok(sim.json.longestWaitSeconds < 120, sim.text);
    assert.equal(await pg.getByTestId("sim-longest-wait").locator(".value").innerText(), `${sim.json.longestWaitSeconds} s`);
    if (sim.json.remainingBacklog === 0) {
      assert.equal(await pg.getByTestId("sim-left").locator(".value").innerText(), "none");
    }
    assert.ok(!/drain time/i.test(await pg.getByTestId("sim-result").innerText()), "the result still shows a drain time");

    // The whole graph, with no draft: the page says it replays the saved
    // document, and shows what the server computes for that document.
    const stored = (await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/trial`)).json.spec;
    const simPost = async (doc) => {
      const r = await apiCall(live.stack.api, "POST", `/api/apps/${app}/graphs/trial/simulate?minutes=60`, doc);
      assert.equal(r.status, 200, r.text);
      return r.json;
    };
    await pg.getByTestId("sim-no-draft").waitFor();
    await pg.getByTestId("sim-all").click();
    await pg.getByTestId("sim-all-result").waitFor({ timeout: 30000 });
    const savedSim = await simPost(stored);
    assert.equal(savedSim.items, trialItems, JSON.stringify(savedSim));
    assert.equal(savedSim.delayedItems, 0, `the Watch document has no budget, so nothing waits: ${JSON.stringify(savedSim)}`);
    const shown = async () => {
      const res = pg.getByTestId("sim-all-result");
      const row = res.locator('[data-node="api"]');
      return {
        source: await res.getAttribute("data-source"), label: await pg.getByTestId("sim-all-source").innerText(),
        items: num(await pg.getByTestId("sim-all-items").locator(".value").innerText()),
        delivered: num(await pg.getByTestId("sim-all-delivered").locator(".value").innerText()),
        delayed: num(await pg.getByTestId("sim-all-delayed").locator(".value").innerText()),
        nodeAdmitted: num(await row.getByTestId("admitted").innerText()), nodeDelayed: num(await row.getByTestId("delayed").innerText()),
      };
    };
    const sameAs = (ui, sim, what) => {
      const api = sim.nodes.find((n) => n.node === "api");
      assert.deepEqual({ items: ui.items, delivered: ui.delivered, delayed: ui.delayed, nodeAdmitted: ui.nodeAdmitted, nodeDelayed: ui.nodeDelayed },
        { items: sim.items, delivered: sim.delivered, delayed: sim.delayedItems, nodeAdmitted: api.admitted, nodeDelayed: api.delayedItems }, what);
    };
    let ui = await shown();
    assert.equal(ui.source, "saved");
    assert.match(ui.label, /saved document \(version 3\)/);
    sameAs(ui, savedSim, "the saved document's simulation on the page differs from the server's");

    // Configure limits: enforcement selected, version bumped; a tight limit
    // (2 per second) entered and NOT saved.
    await pg.getByTestId("configure-limits").click();
    await pg.waitForURL(`**/graphs/${app}/trial/edit?mode=enforce`);
    await pg.getByTestId("graph-form").waitFor();
    assert.equal(await pg.getByTestId("f-mode").inputValue(), "enforce");
    assert.equal(await pg.getByTestId("f-version").inputValue(), "4");
    await pg.getByTestId("version-note").waitFor();
    // Configure limits starts from the last "Try a limit" (5 per second on api).
    assert.match(await pg.getByTestId("tried-note").innerText(), /5 per 1000 ms on node api/);
    assert.equal(await pg.getByTestId("budget-count").inputValue(), "5");
    await pg.getByTestId("budget-count").fill("2");
    await pg.locator('[data-at="/nodes/api/budgets/0/timeMs"]').fill("1000");
    await pg.getByTestId("simulate-draft").click();
    await pg.waitForURL(`**/graphs/${app}/trial/watch`);

    // The Watch page offers the draft and simulates it by default. The
    // oracle: the same edit applied by this test to the stored document,
    // POSTed to the simulate route directly.
    await pg.getByTestId("sim-draft").waitFor();
    assert.match(await pg.getByTestId("sim-draft").innerText(), /unsaved draft of this graph: version 4, enforcing limits/);
    assert.equal(await pg.getByTestId("sim-source-draft").isChecked(), true);
    const candidate = structuredClone(stored);
    delete candidate.watch;
    candidate.version = 4;
    candidate.nodes.api.budgets = [{ id: "global", count: 2, timeMs: 1000, confidence: "inferred" }];
    const draftSim = await simPost(candidate);
    assert.equal(draftSim.version, 4);
    assert.ok(draftSim.delayedItems > 0 && draftSim.nodes.find((n) => n.node === "api").delayedItems > 0,
      `${trialItems} items at 2 per second must wait: ${JSON.stringify(draftSim)}`);
    await pg.getByTestId("sim-all").click();
    await pg.waitForFunction(() => document.querySelector('[data-testid="sim-all-result"]')?.getAttribute("data-source") === "draft", null, { timeout: 30000 });
    ui = await shown();
    assert.match(ui.label, /unsaved draft \(version 4\)/);
    sameAs(ui, draftSim, "the draft's simulation on the page differs from the server's for the same draft");
    assert.ok(ui.delayed > savedSim.delayedItems, `the draft's tight limit delays items (${ui.delayed}) where the saved Watch document delays ${savedSim.delayedItems}`);
    await shot(pg, "watch-draft-simulated-1440-light");

    // Switching back to the saved document simulates it again, and says so.
    await pg.getByTestId("sim-source-saved").check();
    await pg.getByTestId("sim-all").click();
    await pg.waitForFunction(() => document.querySelector('[data-testid="sim-all-result"]')?.getAttribute("data-source") === "saved", null, { timeout: 30000 });
    sameAs(await shown(), savedSim, "the saved document's simulation after switching back");

    // Try a limit keeps working with a draft: prefilled with the draft's 2 per second.
    assert.equal(await pg.getByTestId("sim-count").inputValue(), "2");
    await pg.getByTestId("sim-run").click();
    await pg.getByTestId("sim-result").waitFor({ timeout: 30000 });
    const sim2 = await apiCall(live.stack.api, "GET", `/api/apps/${app}/graphs/trial/simulate?node=api&count=2&timeMs=1000&minutes=60`);
    assert.equal(sim2.status, 200, sim2.text);
    assert.equal(num(await pg.getByTestId("sim-delayed").locator(".value").innerText()), sim2.json.delayedItems);
    assert.equal(num(await pg.getByTestId("sim-peak").locator(".value").innerText()), sim2.json.peakBacklog);

    // Back to the editor: the draft is restored; raise the limit and save it.
    await pg.getByRole("link", { name: "Continue editing" }).click();
    await pg.getByTestId("draft-restored").waitFor();
    assert.equal(await pg.getByTestId("f-mode").inputValue(), "enforce");
    assert.equal(await pg.getByTestId("budget-count").inputValue(), "2");
    await pg.getByTestId("budget-count").fill("25");
    await pg.getByTestId("save").click();
    await pg.getByTestId("diff-mode").waitFor();
    assert.match(await pg.getByTestId("diff-mode").innerText(), /Limits activated/);
    await pg.getByTestId("confirm-save").click();
    await pg.waitForURL(`**/graphs/${app}/trial?saved=1`);
    await pg.getByText("enforcing", { exact: true }).waitFor();
    const v = await apiCall(live.stack.console, "GET", `/v1/apps/${app}/graphs/trial`);
    assert.equal(v.json.version, 4);
    assert.equal(v.json.watching, false);
    assert.equal(v.json.nodes[0].budgets[0].count, 25);
    assert.deepEqual(await pg.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith("gate-draft:"))), [], "the saved draft was kept");
    p.assertClean();
    await p.close();
  });

  test("the overview shows the admitted rate the server computes from history (graphs with counters ran)", async () => {
    // The stack runs PostgreSQL history and gate-recorder, and trial records minute roll-ups (counters on).
    const ov = await apiCall(live.stack.console, "GET", "/api/overview");
    assert.equal(ov.status, 200, ov.text);
    assert.equal(ov.json.admitted_per_sec_reason, null, `the rate is knowable here: ${ov.text}`);
    assert.equal(typeof ov.json.admitted_per_sec, "number", ov.text);
    const p = await open(live.stack.console, "/");
    await p.page.getByTestId("stat-admitted").getByTestId("rate").waitFor();
    assert.match(await p.page.getByTestId("rate").innerText(), /^[\d,.]+\/s now$/);
    assert.equal(await p.page.getByTestId("rate-reason").count(), 0);
    p.assertClean();
    await p.close();
  });

  test("the lists page and search on the server: Targets, Graphs and the overview's Find a graph", async () => {
    const names = Array.from({ length: 12 }, (_, i) => `list${String(i).padStart(2, "0")}`);
    for (const n of names) {
      const r = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/${n}`, { version: 1,
        nodes: { limit: { ingress: true, budgets: [{ id: "global", count: 10, timeMs: 1000 }], egress: `${app}.${n}.out` } }, paths: [{ name: "main", nodes: ["limit"] }] });
      assert.equal(r.status, 200, r.text);
    }
    const page1 = await apiCall(live.stack.console, "GET", `/api/targets?q=${app}/list&limit=5`);
    assert.equal(page1.status, 200, page1.text);
    assert.equal(page1.json.items.length, 5);
    assert.equal(page1.json.matched, 12);
    assert.ok(page1.json.next, "a first page of 5 of 12 names the next");
    const bad = await apiCall(live.stack.console, "GET", "/api/targets?limit=0");
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.json.field, "limit");

    const p = await open(live.stack.console, `/targets?q=${encodeURIComponent(`${app}/list`)}`);
    const pg = p.page;
    await pg.getByTestId("targets-table").waitFor();
    await until("the targets page shows the 12 matching graphs", async () => (await pg.getByTestId("targets-table").locator("tbody tr").count()) === 12, 30000);
    assert.match(await pg.getByTestId("targets-pager").getByRole("status").innerText(), /^1–12 of 12 matching · [\d,]+ targets$/);
    assert.ok(await pg.getByTestId("targets-pager").getByRole("button", { name: "Next →" }).isDisabled());
    // Search for nothing: the server's empty answer, said as such.
    await pg.getByTestId("search").fill(`${app}/nothing-like-it`);
    await pg.getByText("Nothing matches these filters").waitFor();
    assert.match(await pg.getByTestId("targets-pager").getByRole("status").innerText(), /^No target matches · [\d,]+ targets$/);

    // The overview pages its search 10 at a time: Next and Previous walk the server's cursors.
    await pg.goto(live.stack.console + "/");
    await pg.getByTestId("find-graph").fill(`${app}/list`);
    const status = pg.getByTestId("find-pager").getByRole("status");
    await until("the first page of the search", async () => /^1–10 of 12 matching/.test(await status.innerText()), 30000);
    assert.equal(await pg.getByTestId("find-table").locator("tbody tr").count(), 10);
    assert.equal(await pg.getByTestId("find-table").locator("tbody tr").first().innerText().then((t) => t.split("\t")[0]), `${app}/list00`);
    await pg.getByTestId("find-pager").getByRole("button", { name: "Next →" }).click();
    await until("the second page", async () => /^11–12 of 12 matching/.test(await status.innerText()), 30000);
    assert.deepEqual((await pg.getByTestId("find-table").locator("tbody tr td:first-child").allInnerTexts()), [`${app}/list10`, `${app}/list11`]);
    assert.ok(await pg.getByTestId("find-pager").getByRole("button", { name: "Next →" }).isDisabled());
    await pg.getByTestId("find-pager").getByRole("button", { name: "← Previous" }).click();
    await until("back on the first page", async () => /^1–10 of 12 matching/.test(await status.innerText()), 30000);
    assert.match(await pg.getByTestId("figures-age").innerText(), /computed on the server at most every 5 s/);

    // The Graphs page searches the same way, and an application filter keeps to it.
    await pg.goto(live.stack.console + `/graphs?app=${app}&q=list1`);
    await until("the graphs page shows list10 and list11", async () => (await pg.getByTestId("graphs-table").locator("tbody tr").count()) === 2, 30000);
    assert.match(await pg.getByTestId("graphs-pager").getByRole("status").innerText(), /^1–2 of 2 matching/);
    p.assertClean();
    await p.close();
  });

  test("a graph no relay runs reads as queued, in the server's words (the answers rewritten to running: false)", async () => {
    // Every graph of this stack runs, so the answers are rewritten in the
    // browser; the server's side is gate-api's TestIngestQueuesWhenNoRelayRunsTheGraph.
    const sentence = "queued; no relay runs this graph right now: items wait in the ingress queue";
    const p = await open(live.stack.console, "/");
    const pg = p.page;
    const stopped = async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      for (const row of body.items ?? [body]) row.running = false;
      await route.fulfill({ response: res, json: body });
    };
    await pg.route(`**/api/targets?*`, stopped);
    await pg.route(`**/v1/apps/${app}/graphs/mailer`, stopped);
    await pg.goto(live.stack.console + `/targets?q=${app}/mailer`);
    await pg.getByTestId("no-relay").first().waitFor();
    assert.match(await pg.getByTestId("targets-table").innerText(), new RegExp(sentence.replace(/[;:]/g, ".")));
    await shot(pg, "targets-no-relay-1440-light");
    await pg.goto(live.stack.console + `/graphs/${app}/mailer`);
    await pg.getByTestId("no-relay-note").waitFor();
    assert.match(await pg.getByTestId("no-relay-note").innerText(), new RegExp(`Pushes are ${sentence.replace(/[;:]/g, ".")}`));
    assert.equal(await pg.getByTestId("not-running").innerText(), "queued, no relay");
    await shot(pg, "graph-no-relay-1440-light");
    p.assertClean();
    await p.close();
  });

  test("every page at 1440×900 and 375×667, light and dark, saved under screenshots/", async () => {
    // A Watch graph so the Watch page has something to show.
    const w = await apiCall(live.stack.api, "PUT", `/v1/apps/${app}/graphs/observe`, { version: 1, counters: { windowSeconds: 60 }, watch: { durationSeconds: 3600 },
      nodes: { api: { ingress: true, budgets: [], egress: { queue: `${app}.observe.out`, group: "observers" } } }, paths: [{ name: "main", nodes: ["api"] }] });
    assert.equal(w.status, 200, w.text);
    const pages = [
      ["overview", "/"], ["targets", "/targets"], ["new-target", "/targets/new"], ["graphs", "/graphs"], ["new-graph", "/graphs/new"],
      ["graph-detail", `/graphs/${app}/mailer`], ["edit-form", `/graphs/${app}/mailer/edit`], ["edit-json", `/graphs/${app}/mailer/edit?view=json`],
      ["clone", `/graphs/${app}/mailer/clone`], ["integration-guide", `/graphs/${app}/mailer/guide`], ["watch", `/graphs/${app}/observe/watch`],
      ["why-waiting", `/graphs/${app}/mailer/why`], ["traffic", `/graphs/${app}/trial/traffic`], ["graph-denials", `/graphs/${app}/tight`],
    ];
    for (const [w, h] of [[1440, 900], [375, 667]]) {
      for (const theme of ["light", "dark"]) {
        const p = await cleanPage(live.browser, { width: w, height: h, theme });
        const failed = [];
        p.page.on("response", (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); });
        for (const [name, path] of pages) {
          failed.length = 0;
          await p.page.goto(live.stack.console + path);
          await p.page.waitForLoadState("networkidle").catch(() => {});
          await p.page.waitForTimeout(600);
          // Every route answers now (history runs): no page shows an error state.
          assert.deepEqual(failed, [], `${name}: failed requests`);
          assert.equal(await p.page.getByTestId("error-state").count(), 0, `${name} shows an error state`);
          assert.ok(await p.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1) || name === "graph-detail", `${name} scrolls sideways at ${w} px`);
          await shot(p.page, `${name}-${w}-${theme}`);
        }
        p.assertClean();
        await p.close();
      }
    }
  });
});
