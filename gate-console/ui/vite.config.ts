import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";
import { fileURLToPath } from "node:url";

// The console is built into ../webapp/dist, which the Go package
// gate-console/webapp embeds. The output is committed, so the build must be
// deterministic: content-hashed names, no timestamps, no source maps.
const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  base: "/",
  plugins: [react()],
  server: { fs: { allow: [here, fileURLToPath(new URL("../../libs/schema", import.meta.url))] } },
  build: {
    outDir: fileURLToPath(new URL("../webapp/dist", import.meta.url)),
    emptyOutDir: true,
    sourcemap: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 600,
    assetsInlineLimit: 0,
  },
});
