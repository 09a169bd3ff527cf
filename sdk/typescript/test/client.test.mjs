// Client construction: defaults from the environment, validation of options.
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { CortadelClient, DEFAULT_BASE_URL, DEFAULT_TIMEOUT_MS } from "@cortadel/sdk";
import { localServer } from "./support.mjs";

const saved = { ...process.env };
afterEach(() => {
  for (const name of ["CORTADEL_BASE_URL", "CORTADEL_API_KEY"]) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

test("defaults: localhost:3001 and a 100 s timeout", () => {
  delete process.env.CORTADEL_BASE_URL;
  const client = new CortadelClient({ userId: "alice" });
  assert.equal(client.baseUrl, "http://localhost:3001");
  assert.equal(DEFAULT_BASE_URL, "http://localhost:3001");
  assert.equal(client.timeoutMs, 100_000);
  assert.equal(DEFAULT_TIMEOUT_MS, 100_000);
  assert.equal(client.userId, "alice");
});

test("CORTADEL_BASE_URL and CORTADEL_API_KEY are read when the options are unset", async () => {
  const seen = [];
  const server = await localServer((req, res) => {
    seen.push(req.headers.authorization);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ message: "Deleted 0 memories" }));
  });
  try {
    process.env.CORTADEL_BASE_URL = `${server.baseUrl}/`;
    process.env.CORTADEL_API_KEY = "env-key";
    const fromEnv = new CortadelClient({ userId: "alice" });
    assert.equal(fromEnv.baseUrl, server.baseUrl);
    assert.deepEqual(await fromEnv.delete("nope"), { message: "Deleted 0 memories" });
    const explicit = new CortadelClient({ userId: "alice", baseUrl: server.baseUrl, apiKey: "given-key" });
    await explicit.delete("nope");
    assert.deepEqual(seen, ["Bearer env-key", "Bearer given-key"]);
  } finally {
    await server.close();
  }
});

test("a missing userId or a bad timeout is rejected at construction", () => {
  assert.throws(() => new CortadelClient({ userId: "" }), /non-empty userId/);
  assert.throws(() => new CortadelClient({}), TypeError);
  assert.throws(() => new CortadelClient({ userId: "a", timeoutMs: -1 }), /timeoutMs/);
  assert.throws(() => new CortadelClient({ userId: "a", timeoutMs: Number.NaN }), /timeoutMs/);
});
