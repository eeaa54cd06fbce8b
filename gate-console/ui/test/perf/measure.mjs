// The console's measured figures (README): first-page bundle size (gzip),
// time to first render of the overview and of a 20-node graph detail, and
// Chromium's CPU while the live view of that graph's 20 stages updates every
// second. Runs against the real stack; prints one line per figure.
//   node test/perf/measure.mjs
import { readdirSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { loadavg } from "node:os";
import { apiCall, cleanPage, launch, startStack, uiDir } from "../browser/lib.mjs";

const dist = join(uiDir, "../webapp/dist");
const html = readFileSync(join(dist, "index.html"), "utf8");
const refs = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].map((m) => m[1]);
let gz = gzipSync(html).length, raw = html.length;
for (const r of refs) { const b = readFileSync(join(dist, r)); raw += b.length; gz += gzipSync(b, { level: 9 }).length; }
console.log(`first page: index.html + ${refs.join(" + ")} = ${(raw / 1024).toFixed(1)} KiB raw, ${(gz / 1024).toFixed(1)} KiB gzip (level 9)`);

const stack = await startStack();
const { browser, close } = await launch();
const app = "perf";
let pushing = true, pusher = Promise.resolve();
try {
  const names = Array.from({ length: 20 }, (_, i) => `n${String(i + 1).padStart(2, "0")}`);
  const nodes = Object.fromEntries(names.map((n, i) => [n, {
    ...(i === 0 ? { ingress: true } : {}), budgets: [{ id: "b", count: 1000, timeMs: 1000 }],
    ...(i === names.length - 1 ? { egress: { queue: "perf.chain.out", group: "w" } } : {}),
  }]));
  const put = await apiCall(stack.api, "PUT", `/v1/apps/${app}/graphs/chain`, { version: 1, nodes, paths: [{ name: "main", nodes: names }] });
  if (put.status !== 200) throw new Error(put.text);
  for (let i = 0; i < 60; i++) {
    const v = await apiCall(stack.console, "GET", `/v1/apps/${app}/graphs/chain`);
    if (v.json?.running) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  // Steady traffic so every stage's counters change every second.
  pusher = (async () => { while (pushing) { await Promise.all(Array.from({ length: 5 }, (_, k) => apiCall(stack.api, "POST", `/v1/apps/${app}/graphs/chain/nodes/n01/push`, { partition: `p${k}`, payload: { k } }))); await new Promise((r) => setTimeout(r, 100)); } })().catch((e) => { if (pushing) throw e; });

  const median = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const ttfr = async (path, ready) => {
    const out = [];
    for (let i = 0; i < 5; i++) {
      const p = await cleanPage(browser);
      await p.page.goto(stack.console + path, { waitUntil: "commit" });
      out.push(await (await p.page.waitForFunction(ready, null, { polling: "raf", timeout: 30000 })).jsonValue());
      await p.close();
    }
    return out;
  };
  const ov = await ttfr("/", () => document.querySelector('[data-testid="stat-graphs"]') && performance.now());
  console.log(`time to first render, overview (navigation start → stats shown, 5 runs): median ${median(ov).toFixed(0)} ms [${ov.map((x) => x.toFixed(0)).join(", ")}]`);
  const gd = await ttfr(`/graphs/${app}/chain`, () => document.querySelectorAll("[data-node]").length === 20 && document.querySelectorAll("[data-stage]").length === 20 && performance.now());
  console.log(`time to first render, 20-node graph detail (diagram and 20 stage rows shown, 5 runs): median ${median(gd).toFixed(0)} ms [${gd.map((x) => x.toFixed(0)).join(", ")}]`);

  // Live view: 30 s of the 20-stage detail with the stream on.
  const p = await cleanPage(browser);
  await p.page.goto(`${stack.console}/graphs/${app}/chain`);
  await p.page.getByText(/streaming stage counters/).waitFor({ timeout: 90000 });
  await p.page.evaluate(() => {
    window.__updates = 0;
    new MutationObserver(() => { window.__updates++; }).observe(document.querySelector('[data-testid="live-state"]'), { childList: true, subtree: true, characterData: true });
  });
  await p.page.waitForTimeout(3000);
  const cdp = await p.context.newCDPSession(p.page);
  await cdp.send("Performance.enable");
  const metric = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((m) => [m.name, m.value]));
  const procs = () => chromiumCPU(browser.process().pid);
  const m0 = await metric(), c0 = procs(), t0 = Date.now();
  await p.page.evaluate(() => { window.__updates = 0; });
  await p.page.waitForTimeout(30000);
  const m1 = await metric(), c1 = procs(), t1 = Date.now();
  const updates = await p.page.evaluate(() => window.__updates);
  const wall = (t1 - t0) / 1000;
  const mainThread = (m1.TaskDuration - m0.TaskDuration) / wall;
  const all = (c1 - c0) / wall;
  console.log(`live view, 20 stages, ${updates} stream updates in ${wall.toFixed(0)} s: renderer main thread ${(mainThread * 100).toFixed(1)}% of one core (CDP TaskDuration); all chromium processes ${(all * 100).toFixed(1)}% of one core (/proc utime+stime)`);
  p.assertClean();
  await p.close();
} finally {
  pushing = false;
  await pusher.catch((e) => console.error("pusher:", e.message));
  await close();
  await stack.stop();
}
console.log(`load average at the end: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);

/** CPU seconds used so far by pid and all its descendants. */
function chromiumCPU(root) {
  const tick = 100; // USER_HZ on Linux
  const stats = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, "utf8");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      stats.push({ pid: Number(d), ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / tick });
    } catch { /* exited */ }
  }
  const want = new Set([root]);
  let grew = true;
  while (grew) { grew = false; for (const s of stats) if (!want.has(s.pid) && want.has(s.ppid)) { want.add(s.pid); grew = true; } }
  return stats.filter((s) => want.has(s.pid)).reduce((a, s) => a + s.cpu, 0);
}
