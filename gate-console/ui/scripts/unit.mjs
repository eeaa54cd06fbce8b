// Component tests without a browser: bundle test/unit/*.test.ts with the
// pinned vite (SSR build, Node target) into .tmp/unit, then run them with
// node --test so the runner's closing line is the one CI reads.
import { build } from "vite";
import { readdirSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = `${root}.tmp/unit`;
rmSync(out, { recursive: true, force: true });
const tests = readdirSync(`${root}test/unit`).filter((f) => f.endsWith(".test.ts"));
for (const t of tests) {
  await build({
    configFile: false, root, logLevel: "warn",
    build: { ssr: `test/unit/${t}`, outDir: out, emptyOutDir: false, rollupOptions: { output: { entryFileNames: "[name].mjs" } } },
  });
}
const r = spawnSync(process.execPath, ["--test", ...tests.map((t) => `${out}/${t.replace(/\.ts$/, ".mjs")}`)], { stdio: "inherit" });
process.exit(r.status ?? 1);
