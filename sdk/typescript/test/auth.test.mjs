// A real Cortadel server with authentication on: keys minted by its CLI, bound to one user.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CortadelClient, CortadelConnectionError, CortadelError } from "@cortadel/sdk";
import { mintKey, recordingFetch, startServer } from "./support.mjs";

const env = { CORTADEL_AUTH_SECRET: "sdk-test-secret" };
let server;
let aliceKey;
let bobKey;
before(async () => {
  server = await startServer({ env });
  aliceKey = mintKey("alice", env);
  bobKey = mintKey("bob", env);
});
after(() => server?.stop());

const client = (apiKey, options = {}) =>
  new CortadelClient({ baseUrl: server.baseUrl, userId: "alice", apiKey, ...options });

test("the user's own key works and travels as a Bearer header", async () => {
  const recorder = recordingFetch();
  const alice = client(aliceKey, { fetch: recorder.fetch });
  const added = await alice.add("Alice's locker is number 42", { infer: false });
  assert.equal(recorder.last().headers.Authorization, `Bearer ${aliceKey}`);
  assert.equal((await alice.get(added.id)).text, "Alice's locker is number 42");
});

test("no key is 401 unauthorized", async () => {
  const error = await client(undefined).list().catch((e) => e);
  assert.ok(error instanceof CortadelError);
  assert.ok(!(error instanceof CortadelConnectionError));
  assert.equal(error.status, 401);
  assert.equal(error.code, "unauthorized");
});

test("a forged key is 401 unauthorized", async () => {
  const error = await client(`${aliceKey}x`).search("locker").catch((e) => e);
  assert.equal(error.status, 401);
  assert.equal(error.code, "unauthorized");
});

test("another user's key is 403 forbidden, for reads and writes", async () => {
  const withBobsKey = client(bobKey);
  const readError = await withBobsKey.list().catch((e) => e);
  assert.equal(readError.status, 403);
  assert.equal(readError.code, "forbidden");
  const writeError = await withBobsKey.add("Bob pretending to be Alice").catch((e) => e);
  assert.equal(writeError.status, 403);
  assert.equal((await client(aliceKey).list()).items.some((m) => m.content === "Bob pretending to be Alice"), false);
});

test("a get with a wrong key is an error, not a null", async () => {
  const error = await client(bobKey).get("00000000-0000-4000-8000-000000000000").catch((e) => e);
  assert.ok(error instanceof CortadelError);
  assert.equal(error.status, 403);
});

test("health needs no key", async () => {
  const health = await client(undefined).health();
  assert.equal(health.status, "ok");
});
