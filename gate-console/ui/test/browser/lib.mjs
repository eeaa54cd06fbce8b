// Shared pieces of the console's browser tests: the real stack (started by
// the Go harness in ../../harness), Debian's chromium through playwright-core,
// and a page that fails the test on any console error, unhandled rejection
// or CSP violation.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

export const uiDir = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const repoRoot = resolve(uiDir, "../..");
export const shotsDir = join(uiDir, "screenshots");
export const CHROMIUM = process.env.GATE_CHROMIUM ?? "/usr/bin/chromium";
export const requireLive = process.env.GATE_TEST_REQUIRE_LIVE === "1";

/** Why the browser tests cannot run here, or null when they can. */
export async function missing() {
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM} (apt-get install -y chromium)`;
  try { await import("playwright-core"); } catch { return "playwright-core is not installed (npm ci in gate-console/ui)"; }
  return null;
}

/** Start the stack; resolves with its URLs and a stop function. */
export function startStack() {
  return new Promise((resolveP, reject) => {
    const child = spawn("go", ["run", "./gate-console/ui/harness"], { cwd: repoRoot, stdio: ["pipe", "pipe", "pipe"], detached: true });
    let err = "";
    child.stderr.on("data", (d) => { err += d; if (err.length > 20000) err = err.slice(-20000); });
    const rl = createInterface({ input: child.stdout });
    const timer = setTimeout(() => { kill(); reject(new Error(`the stack did not start within 240 s:\n${err}`)); }, 240000);
    const kill = () => { try { process.kill(-child.pid, "SIGTERM"); } catch { /* gone */ } };
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`the harness exited (${code}):\n${err}`)); });
    rl.once("line", (line) => {
      clearTimeout(timer);
      const urls = JSON.parse(line);
      resolveP({
        ...urls,
        stderr: () => err,
        stop: () => new Promise((r) => { child.removeAllListeners("exit"); child.once("exit", r); child.stdin.end(); setTimeout(kill, 15000).unref(); }),
      });
    });
  });
}

/**
 * The live set-up every browser test file shares. liveSuite(what) reports
 * why the file's tests cannot run here as live.skip (the describe's skip),
 * or, under GATE_TEST_REQUIRE_LIVE=1, as a failing test named for what.
 * Called inside the describe, live.start() registers its before (start the
 * stack, then chromium) and after (onStop with the stack, then close
 * chromium, then stop the stack); live.stack (startStack's answer) and
 * live.browser (playwright's Browser) are set once before has run.
 */
export async function liveSuite(what = "the browser tests") {
  const why = await missing();
  if (why && requireLive) test(`${what} can run (GATE_TEST_REQUIRE_LIVE=1)`, () => assert.fail(why));
  const live = {
    skip: why && !requireLive ? why : false,
    stack: undefined,
    browser: undefined,
    start({ onStop } = {}) {
      before(async () => {
        live.stack = await startStack();
        live.browser = (await launch()).browser;
      }, { timeout: 300000 });
      after(async () => {
        await onStop?.(live.stack);
        await live.browser?.close();
        await live.stack?.stop();
      });
    },
  };
  return live;
}

export async function launch() {
  const { chromium } = await import("playwright-core");
  // playwright-core gives every launch a fresh temporary --user-data-dir of
  // its own (and refuses one passed in args); it is removed on close.
  const browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  return { browser, close: () => browser.close() };
}

/**
 * A page that records every console error, unhandled rejection, page error
 * and CSP violation; call assertClean() at the end of a test.
 */
export async function cleanPage(browser, { width = 1440, height = 900, theme = "light" } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme: theme });
  await context.addInitScript((t) => {
    localStorage.setItem("gate-theme", t);
    document.addEventListener("securitypolicyviolation", (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
    window.addEventListener("unhandledrejection", (e) => console.error(`unhandled rejection: ${e.reason}`));
  }, theme);
  const page = await context.newPage();
  const problems = [];
  const allowed = [];
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const text = m.text(), url = m.location()?.url ?? "";
    if (!allowed.some((re) => re.test(text))) problems.push(`console error: ${text}${url ? ` (${url})` : ""}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  return {
    page, context, problems,
    /** An expected failure the test itself provokes (a server refusal logged by the browser). */
    allow: (re) => allowed.push(re),
    assertClean: () => { if (problems.length) throw new Error(`the page was not clean:\n${problems.join("\n")}`); },
    close: () => context.close(),
  };
}

/** Wait until fn() returns a truthy value (polled every 500 ms), or fail naming what. */
export async function until(what, fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what}: not within ${timeoutMs / 1000} s (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
}

/** A displayed number ("1,234") as a number. */
export const num = (text) => Number(String(text).replace(/,/g, ""));

export async function shot(page, name) {
  mkdirSync(shotsDir, { recursive: true });
  await page.screenshot({ path: join(shotsDir, `${name}.png`), fullPage: true });
}

/** gate-api call from the test (the application plane, no session). */
export async function apiCall(base, method, path, body) {
  const res = await fetch(base + path, { method, headers: body === undefined ? {} : { "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* plain text */ }
  return { status: res.status, json, text };
}

/**
 * An axe-core scan of the page as it stands: the serious and critical
 * violations, each as "rule: help (n nodes: selectors)". axe is evaluated
 * through the DevTools protocol, so the page's CSP (script-src 'self')
 * stays as strict as in production.
 */
export async function axeViolations(page) {
  const { readFile } = await import("node:fs/promises");
  const { createRequire } = await import("node:module");
  const src = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(`${src}\n;0`);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5), count: v.nodes.length }));
  });
  return found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.count} node(s): ${v.nodes.join(", ")}`);
}

/** Fail when the page has a serious or critical accessibility violation. */
export async function assertAccessible(page, what) {
  const v = await axeViolations(page);
  if (v.length) throw new Error(`${what}: axe-core found serious or critical violations:\n${v.join("\n")}`);
}
