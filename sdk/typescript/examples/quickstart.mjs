// Run against a Cortadel server:  CORTADEL_BASE_URL=http://localhost:3001 node examples/quickstart.mjs
import { CortadelClient, CortadelError, CortadelTimeoutError } from "@cortadel/sdk";

const memory = new CortadelClient({ userId: "quickstart-user", timeoutMs: 10_000 });

try {
  const added = await memory.add("Alice prefers green tea in the morning", { app: "quickstart" });
  console.log(`add: ${added.event}`);

  const found = await memory.search("green tea", { topK: 3 });
  for (const hit of found.results) console.log(`search: ${hit.content}`);

  const page = await memory.list({ size: 5 });
  console.log(`list: ${page.total} memories`);

  const same = await memory.get(added.id);
  console.log(`get: ${same?.text}`);

  const deleted = await memory.delete(added.id);
  console.log(`delete: ${deleted.message}`);
  console.log(`get after delete: ${await memory.get(added.id)}`);
} catch (error) {
  if (error instanceof CortadelTimeoutError) console.error(`no answer within ${error.timeoutMs} ms`);
  else if (error instanceof CortadelError) console.error(`${error.status} ${error.code}: ${error.message}`);
  else throw error;
  process.exitCode = 1;
}
