// Type-checks, against the built declarations, in one tsc run:
// - test/*.check.ts and *.check.cts: how the published API is meant to be used (ESM and CommonJS);
// - the ```ts code blocks of the package README and docs/sdk-typescript.md, so the documented calls
//   cannot drift from the API. Each document's blocks are concatenated into one module, in order.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const documents = [join(root, "README.md"), join(root, "..", "..", "docs", "sdk-typescript.md")];
const out = join(root, ".docs-check");

rmSync(out, { recursive: true, force: true });
mkdirSync(out);
for (const document of documents) {
  const blocks = [...readFileSync(document, "utf8").matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  if (blocks.length === 0) throw new Error(`${document} has no ts code blocks`);
  writeFileSync(join(out, `${basename(document, ".md")}.ts`), blocks.join("\n"));
}
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "test", "tsconfig.json")], { stdio: "inherit" });
console.log(`types check: test/*.check.ts, ${documents.map((d) => basename(d)).join(", ")}`);
