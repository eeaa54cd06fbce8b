// The AI agent's side panel in a real browser against the real stack, the
// consoles started with GATE_AI_OPENAI_BASE_URL pointing at the harness's
// fake provider (../../harness/fakeai.go): ask, get a validated draft with
// its assumptions, keep it across navigation, review it in the editor,
// create it through the normal declare route, and see it run; a refresh
// clears the conversation; a viewer cannot chat.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { apiCall, cleanPage, liveSuite, shot } from "./lib.mjs";

const live = await liveSuite("the AI agent browser tests");
const app = `ai${Date.now().toString(36).slice(-5)}`;
const graph = "sms-limit";

const calls = async () => Number(await (await fetch(live.stack.fakeAI + "/calls")).text());

describe("AI agent panel in chromium", { skip: live.skip, timeout: 900000 }, () => {
  live.start();

  test("ask → draft with assumptions → kept across navigation → review in editor → create → the graph runs; refresh clears it", async () => {
    const p = await cleanPage(live.browser);
    const pg = p.page;
    await pg.goto(live.stack.console + "/targets");
    await pg.getByTestId("create-with-ai").click();
    const panel = pg.getByTestId("agent-panel");
    await panel.waitFor();
    assert.match(await pg.getByTestId("agent-model").innerText(), /OpenAI · gpt-5\.6-luna/);
    await pg.getByTestId("agent-app").fill(app);
    await pg.getByTestId("agent-input").fill(`Create graph ${graph} for SMS, 30 per second.`);
    const before = await calls();
    await pg.getByTestId("agent-send").click();
    await pg.getByTestId("agent-turn-assistant").waitFor();
    assert.match(await pg.getByTestId("agent-turn-assistant").innerText(), new RegExp(`${app}/${graph}`));
    const assumptions = await pg.getByTestId("agent-assumptions").locator("li").allInnerTexts();
    assert.deepEqual(assumptions, ["Each item costs 1.", "Gate owns the incoming queue (HTTP push available)."]);
    await pg.getByTestId("agent-draft").waitFor();
    assert.match(await pg.getByTestId("agent-draft").innerText(), new RegExp(`Draft ${app}/${graph}`));
    assert.equal(await calls() - before, 1, "one provider call for a valid draft");
    // The agent saved nothing.
    assert.equal((await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/${graph}`)).status, 404);
    await shot(pg, "ai-agent-1440-light");

    // Closing the panel and navigating keeps the conversation and draft.
    await pg.getByTestId("agent-close").click();
    assert.equal(await panel.count(), 0);
    await pg.getByRole("link", { name: "Graphs" }).click();
    await pg.waitForURL("**/graphs");
    await pg.getByTestId("nav-agent").click();
    await panel.waitFor();
    // The reopened panel reads the agent's status again and shows the conversation once it has it.
    await pg.getByTestId("agent-model").waitFor();
    assert.equal(await pg.getByTestId("agent-turn-user").count(), 1);
    assert.equal(await pg.getByTestId("agent-turn-assistant").count(), 1);
    assert.equal(await pg.getByTestId("agent-app").inputValue(), app);

    // Review in editor: the editor opens on the draft; creating is the
    // editor's explicit declare.
    await pg.getByTestId("agent-review").click();
    await pg.waitForURL("**/graphs/new?from=ai*");
    await pg.getByTestId("ai-draft-note").waitFor();
    await pg.getByTestId("agent-close").click();
    await pg.getByTestId("view-json").click();
    const doc = JSON.parse(await pg.getByTestId("json-editor").inputValue());
    assert.equal(doc.application, app);
    assert.equal(doc.graph, graph);
    assert.equal(doc.nodes.limit.budgets[0].count, 30);
    assert.equal(doc.nodes.limit.egress, `${app}.${graph}.out`);
    await pg.getByTestId("save").click();
    await pg.getByTestId("confirm-save").click();
    await pg.waitForURL(`**/graphs/${app}/${graph}/guide?created=1`);
    await pg.getByTestId("created").waitFor();

    // The graph runs: a relay reports it, and pushes go through.
    let view;
    for (let i = 0; i < 60; i++) {
      view = await apiCall(live.stack.api, "GET", `/v1/apps/${app}/graphs/${graph}`);
      if (view.status === 200 && view.json?.running) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(view.status, 200, view.text);
    assert.equal(view.json.running, true, `the created graph does not run: ${view.text.slice(0, 400)}`);
    const push = await apiCall(live.stack.api, "POST", `/v1/apps/${app}/graphs/${graph}/nodes/limit/push`, { payload: { to: "+100" } });
    assert.equal(push.status, 200, push.text);

    // A refresh clears the conversation and the draft.
    await pg.reload();
    await pg.getByTestId("nav-agent").click();
    await panel.waitFor();
    await pg.getByTestId("agent-model").waitFor();
    assert.equal(await pg.getByTestId("agent-turn-user").count(), 0);
    assert.equal(await pg.getByTestId("agent-draft").count(), 0);
    assert.equal(await pg.getByTestId("agent-app").inputValue(), "");
    p.assertClean();
    await p.close();
  });

  test("a clarification comes back without a draft; a taken name is refused by Gate's validation after one repair", async () => {
    const p = await cleanPage(live.browser);
    const pg = p.page;
    await pg.goto(live.stack.console + "/");
    await pg.getByTestId("nav-agent").click();
    await pg.getByTestId("agent-app").fill(app);
    await pg.getByTestId("agent-input").fill("Set up the correct limits for my vendor.");
    await pg.getByTestId("agent-send").click();
    await pg.getByTestId("agent-turn-assistant").waitFor();
    assert.match(await pg.getByTestId("agent-turn-assistant").innerText(), /Which queue/);
    assert.equal(await pg.getByTestId("agent-draft").count(), 0);

    // The same name again: the fake repeats it, Gate refuses it twice.
    p.allow(/status of 502/);
    const before = await calls();
    await pg.getByTestId("agent-input").fill(`Create graph ${graph} at 10 per second.`);
    await pg.getByTestId("agent-send").click();
    await pg.getByTestId("agent-error").waitFor();
    assert.match(await pg.getByTestId("agent-error").innerText(), /did not pass Gate validation.*graph-exists/);
    assert.equal(await calls() - before, 2, "one repair call");
    // The unanswered message is back in the input and out of the conversation.
    assert.match(await pg.getByTestId("agent-input").inputValue(), /Create graph/);
    assert.equal(await pg.getByTestId("agent-turn-user").count(), 1);
    p.assertClean();
    await p.close();
  });

  test("a viewer sees the panel read-only and the server refuses the viewer's chat", async () => {
    const p = await cleanPage(live.browser);
    const pg = p.page;
    await pg.goto(live.stack.viewer + "/targets");
    await pg.getByTestId("targets-table").or(pg.getByText("No targets yet")).first().waitFor();
    assert.equal(await pg.getByTestId("create-with-ai").count(), 0);
    await pg.getByTestId("nav-agent").click();
    await pg.getByTestId("agent-readonly").waitFor();
    assert.equal(await pg.getByTestId("agent-send").isDisabled(), true);
    p.allow(/status of 403/);
    const before = await calls();
    const status = await pg.evaluate(async (a) => (await fetch("/api/ai/chat", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ application: a, messages: [{ role: "user", content: "hi" }] }) })).status, app);
    assert.equal(status, 403);
    assert.equal(await calls(), before, "a refused chat reached the provider");
    p.assertClean();
    await p.close();
  });
});
