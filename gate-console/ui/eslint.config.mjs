// The web app's lint: ESLint's recommended rules, typescript-eslint's
// (type-aware where it matters: floating promises), and the React hooks
// rules (exhaustive deps, the rules of hooks). `npm run lint` and
// `make ui-lint` run it; `make test` fails on any error.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";

export default tseslint.config(
  { ignores: ["node_modules/", "harness/", "screenshots/", ".tmp/", "../webapp/dist/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["src/**/*.{ts,tsx}"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { "react-hooks": reactHooks },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error",
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
  {
    files: ["test/**/*.{ts,mjs}", "scripts/**/*.mjs", "*.mjs", "*.ts"],
    languageOptions: { globals: { process: "readonly", console: "readonly", fetch: "readonly", setTimeout: "readonly", clearTimeout: "readonly", document: "readonly", window: "readonly", structuredClone: "readonly", URL: "readonly", sessionStorage: "readonly", localStorage: "readonly", URLSearchParams: "readonly", performance: "readonly", MutationObserver: "readonly" } },
  },
);
