// Builds dist/esm (ES modules) and dist/cjs (CommonJS), each with .d.ts, from one source tree,
// then checks that both `import` and `require` of the built package work.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const dist = join(root, "dist");

function compile(outDir, ...flags) {
  execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.json"), "--outDir", join(dist, outDir), ...flags], {
    stdio: "inherit",
  });
}

rmSync(dist, { recursive: true, force: true });
compile("esm");
// The ESM pass has type-checked the sources; the CommonJS pass only re-emits them.
compile("cjs", "--module", "CommonJS", "--moduleResolution", "Node10", "--noCheck");
// Each output folder declares its own module format, so `.js` files are read the right way.
for (const [dir, type] of [["esm", "module"], ["cjs", "commonjs"]]) {
  mkdirSync(join(dist, dir), { recursive: true });
  writeFileSync(join(dist, dir, "package.json"), JSON.stringify({ type }) + "\n");
}

// Smoke test: load the package through its own `exports` map, both ways.
const self = createRequire(join(root, "package.json"));
const required = self("@cortadel/sdk");
const imported = await import("@cortadel/sdk");
for (const [how, mod] of [["require", required], ["import", imported]]) {
  const client = new mod.CortadelClient({ baseUrl: "http://127.0.0.1:1/", userId: "smoke" });
  if (client.baseUrl !== "http://127.0.0.1:1" || !(new mod.CortadelTimeoutError(1) instanceof mod.CortadelError)) {
    throw new Error(`${how} of the built package is broken`);
  }
}
if (required.CortadelClient === imported.CortadelClient) throw new Error("require and import resolved to one build");
console.log("build ok: dist/esm and dist/cjs load via import and require");
