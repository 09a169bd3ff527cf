// addBatch against a real Cortadel server, with the raw request recorded to check the snake_case wire.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CortadelClient } from "@cortadel/sdk";
import { recordingFetch, startServer } from "./support.mjs";

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

test("addBatch answers per item, in order, and sends each item as a single add would", async () => {
  const recorder = recordingFetch();
  const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "batch-user", fetch: recorder.fetch });
  const startedAt = Date.now();
  const result = await client.addBatch({
    memories: [
      { text: "Gina cycles to work.", infer: false, app: "sdk-batch", metadata: { n: 1 } },
      "Gina's desk is by the window.",
      { text: "Gina cycles to work.", infer: false },
      { text: "", infer: false },
    ],
    conversations: [
      { messages: [{ role: "user", content: "I keep my passport in the top drawer.", uuid: "turn-1" }], tags: ["travel"] },
      { messages: [{ role: "user", content: "thanks" }] },
    ],
  });
  assert.deepEqual(recorder.last().body, {
    user_id: "batch-user",
    memories: [
      { text: "Gina cycles to work.", infer: false, app: "sdk-batch", metadata: { n: 1 } },
      { text: "Gina's desk is by the window." },
      { text: "Gina cycles to work.", infer: false },
      { text: "", infer: false },
    ],
    conversations: [
      { messages: [{ role: "user", content: "I keep my passport in the top drawer.", uuid: "turn-1" }], tags: ["travel"] },
      { messages: [{ role: "user", content: "thanks" }] },
    ],
  });
  assert.equal(recorder.last().url.pathname, "/api/v1/memories/batch");

  const [cycles, desk, again, empty] = result.memories;
  assert.equal(cycles.event, "ADD");
  assert.equal(cycles.content, "Gina cycles to work.");
  assert.equal(cycles.appName, "sdk-batch");
  assert.deepEqual(cycles.metadata, { n: 1 });
  assert.match(cycles.id, /^[0-9a-f-]{36}$/);
  const created = Date.parse(cycles.createdAt);
  assert.ok(created >= startedAt - 1000 && created <= Date.now() + 1000);
  assert.equal(desk.event, "ADD");
  assert.equal(desk.content, "Gina's desk is by the window.");
  assert.deepEqual([again.event, again.id], ["SKIP_DUPLICATE", cycles.id]);
  assert.deepEqual([empty.event, empty.id, empty.error], [
    "ERROR", "", "Invalid item: text: String should have at least 1 character",
  ]);

  const [passport, thanks] = result.conversations;
  assert.deepEqual(passport.results.map((r) => [r.event, r.memory, r.error]), [
    ["ADD", "User keeps their passport in the top drawer.", null],
  ]);
  assert.equal(passport.noFactsExtracted, false);
  assert.deepEqual(thanks, { results: [], noFactsExtracted: true });
  const page = await client.list();
  assert.equal(page.total, 3);
});
