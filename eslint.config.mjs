// One lint setup for every TypeScript workspace: ESLint's and typescript-eslint's recommended rules,
// type-aware, each file checked against the tsconfig that compiles it. `npm run lint` in a workspace
// runs this and `tsc --noEmit`; `make test` runs every workspace's lint.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

const workspaces = [
  { dir: "sdk/typescript", project: ["sdk/typescript/tsconfig.json", "sdk/typescript/test/tsconfig.json"] },
  { dir: "integrations/mastra", project: ["integrations/mastra/tsconfig.json"] },
  // tsconfig.test.json compiles src and test together.
  { dir: "integrations/n8n-nodes-cortadel", project: ["integrations/n8n-nodes-cortadel/tsconfig.test.json"] },
];

export default tseslint.config(
  { ignores: ["**/dist/", "**/build-test/", "**/.docs-check/", "**/node_modules/"] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    rules: {
      // Off: an `async` function without `await` is the plain way to implement a Promise-returning
      // interface (test doubles, handlers); returning Promise.resolve(...) instead is no safer.
      "@typescript-eslint/require-await": "off",
      // node:test's describe/it return promises the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["describe", "it", "test", "suite"] }] },
      ],
    },
  },
  ...workspaces.map(({ dir, project }) => ({
    files: [`${dir}/**/*.{ts,cts,mts}`],
    languageOptions: { parserOptions: { project, tsconfigRootDir: import.meta.dirname } },
  })),
  {
    // A .cts check file tests the CommonJS declarations through `import x = require(...)` on purpose.
    files: ["**/*.cts"],
    rules: { "@typescript-eslint/no-require-imports": ["error", { allowAsImport: true }] },
  },
  {
    // A CommonJS package: its tests load built files and optional dev dependencies by a path computed
    // at run time, which only require() does synchronously.
    files: ["integrations/n8n-nodes-cortadel/test/**/*.ts"],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["**/*.{js,mjs,cjs}"],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
);
