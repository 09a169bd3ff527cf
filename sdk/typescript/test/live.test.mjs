// Every client method against a real Cortadel server, with the raw requests recorded to check the
// snake_case wire.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { CortadelClient, CortadelError } from "@cortadel/sdk";
import { recordingFetch, startServer } from "./support.mjs";

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

/** A client for a fresh user, recording what it sends. */
function clientFor(userId) {
  const recorder = recordingFetch();
  const client = new CortadelClient({ baseUrl: server.baseUrl, userId, fetch: recorder.fetch });
  return { client, recorder };
}

function assertRecentIso(value, startedAt) {
  assert.match(value, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
  const at = Date.parse(value);
  // The wire's Unix seconds lose the milliseconds, so allow one second of slack before the start.
  assert.ok(at >= startedAt - 1000 && at <= Date.now() + 1000, `${value} is not between the test start and now`);
}

test("health reports ok with its checks", async () => {
  const { client, recorder } = clientFor("health-user");
  const startedAt = Date.now();
  const health = await client.health();
  assert.equal(health.status, "ok");
  assert.equal(health.checks.memgraph.ok, true);
  assert.equal(health.checks.embeddings.ok, true);
  assert.ok(health.checks.embeddings.dim > 0);
  assert.equal(health.checks.indexes.providerDim, health.checks.embeddings.dim);
  assertRecentIso(health.checkedAt, startedAt);
  assert.equal(recorder.last().method, "GET");
  assert.equal(recorder.last().url.pathname, "/api/health");
  assert.equal(recorder.last().url.search, "");
});

describe("add", () => {
  test("stores the text and sends only the snake_case fields that were set", async () => {
    const { client, recorder } = clientFor("add-user");
    const startedAt = Date.now();
    const added = await client.add("Alice prefers green tea in the morning", {
      app: "sdk-test",
      memoryType: "semantic",
      metadata: { source: "test", weight: 2 },
      infer: false,
    });
    assert.deepEqual(recorder.last().body, {
      user_id: "add-user",
      text: "Alice prefers green tea in the morning",
      infer: false,
      app: "sdk-test",
      memory_type: "semantic",
      metadata: { source: "test", weight: 2 },
    });
    assert.equal(recorder.last().method, "POST");
    assert.equal(recorder.last().url.pathname, "/api/v1/memories");
    assert.equal(recorder.last().headers["Content-Type"], "application/json");
    assert.equal(added.event, "ADD");
    assert.equal(added.content, "Alice prefers green tea in the morning");
    assert.equal(added.appName, "sdk-test");
    assert.equal(added.state, "active");
    assert.deepEqual(added.metadata, { source: "test", weight: 2 });
    assert.equal(added.error, null);
    assert.match(added.id, /^[0-9a-f-]{36}$/);
    assertRecentIso(added.createdAt, startedAt);
  });

  test("without options the body is just user_id and text; metadata comes back null", async () => {
    const { client, recorder } = clientFor("add-plain-user");
    const added = await client.add("Bob keeps his bike in the garage");
    assert.deepEqual(recorder.last().body, { user_id: "add-plain-user", text: "Bob keeps his bike in the garage" });
    assert.equal(added.metadata, null);
    assert.equal(added.appName, null);
  });

  test("adding the same fact twice is SKIP_DUPLICATE with the first id", async () => {
    const { client } = clientFor("dup-user");
    const first = await client.add("The office wifi password is on the fridge");
    const second = await client.add("The office wifi password is on the fridge");
    assert.equal(first.event, "ADD");
    assert.equal(second.event, "SKIP_DUPLICATE");
    assert.equal(second.id, first.id);
  });
});

describe("search", () => {
  test("finds a just-added memory exactly once, with camelCase fields", async () => {
    const { client, recorder } = clientFor("search-user");
    const added = await client.add("Carol is allergic to peanuts", { app: "sdk-test", infer: false });
    await client.add("The team standup is at nine thirty");
    const response = await client.search("peanuts allergy", { topK: 5, mode: "hybrid", appName: "searcher" });
    assert.deepEqual(recorder.last().body, {
      query: "peanuts allergy",
      user_id: "search-user",
      top_k: 5,
      mode: "hybrid",
      app_name: "searcher",
    });
    assert.equal(recorder.last().url.pathname, "/api/v1/memories/search");
    assert.equal(response.query, "peanuts allergy");
    const hits = response.results.filter((r) => r.id === added.id);
    assert.equal(hits.length, 1);
    const [hit] = hits;
    assert.equal(response.results[0].id, added.id);
    assert.equal(hit.content, "Carol is allergic to peanuts");
    assert.equal(hit.appName, "sdk-test");
    assert.ok(hit.rrfScore > 0);
    assert.equal(hit.createdAt, added.createdAt);
    assert.equal(hit.global, false);
    assert.equal(response.total, response.results.length);
  });

  test("every search option travels snake_case", async () => {
    const { client, recorder } = clientFor("search-options-user");
    await client.add("Dana runs every Sunday");
    const knownAt = new Date();
    await client.search("running", {
      topK: 3,
      mode: "text",
      memoryType: "semantic",
      sessionId: "s-1",
      appName: "a",
      tokenBudget: 500,
      includeFaded: true,
      includeSessionArm: false,
      expandQuery: false,
      project: "p",
      tag: "t",
      asOf: "2030-01-01T00:00:00Z",
      knownAt,
    });
    assert.deepEqual(recorder.last().body, {
      query: "running",
      user_id: "search-options-user",
      top_k: 3,
      mode: "text",
      app_name: "a",
      session_id: "s-1",
      memory_type: "semantic",
      token_budget: 500,
      expand_query: false,
      include_faded: true,
      include_session_arm: false,
      project: "p",
      tag: "t",
      as_of: "2030-01-01T00:00:00Z",
      known_at: knownAt.toISOString(),
    });
  });

  test("knownAt before a memory was written hides it", async () => {
    const { client } = clientFor("known-at-user");
    const before = new Date(Date.now() - 60_000);
    const added = await client.add("Erin's flight lands at gate twelve");
    const now = await client.search("flight gate", { mode: "text" });
    const then = await client.search("flight gate", { mode: "text", knownAt: before });
    assert.deepEqual(now.results.map((r) => r.id), [added.id]);
    assert.deepEqual(then.results, []);
  });

  test("a server validation failure is a CortadelError 400", async () => {
    const { client } = clientFor("bad-search-user");
    const error = await client.search("tea", { topK: 99 }).catch((e) => e);
    assert.ok(error instanceof CortadelError);
    assert.equal(error.status, 400);
    assert.equal(error.code, "validation_error");
    assert.match(error.message, /top_k/);
    assert.match(error.requestId, /^[0-9a-f]{32}$/);
  });
});

describe("list", () => {
  test("pages newest first with the default size 20 and ISO createdAt", async () => {
    const { client, recorder } = clientFor("list-user");
    const startedAt = Date.now();
    const texts = ["Fay owns a grey cat", "Fay's cat is called Miso", "Fay feeds Miso at seven"];
    const added = [];
    for (const text of texts) added.push(await client.add(text, { infer: false }));

    const page = await client.list();
    assert.deepEqual(Object.fromEntries(recorder.last().url.searchParams), { user_id: "list-user", page: "1", size: "20" });
    assert.equal(recorder.last().url.pathname, "/api/v1/memories");
    assert.equal(page.total, 3);
    assert.equal(page.page, 1);
    assert.equal(page.size, 20);
    assert.equal(page.pages, 1);
    assert.deepEqual(page.items.map((m) => m.content), [...texts].reverse());
    const newest = page.items[0];
    assert.equal(newest.id, added[2].id);
    assertRecentIso(newest.createdAt, startedAt);
    assert.equal(newest.isCurrent, true);
    assert.equal(newest.state, "active");

    const second = await client.list({ page: 2, size: 2 });
    assert.deepEqual(second.items.map((m) => m.id), [added[0].id]);
    assert.deepEqual([second.total, second.page, second.size, second.pages], [3, 2, 2, 2]);
  });

  test("filters travel as the contract's query parameters", async () => {
    const { client, recorder } = clientFor("list-filter-user");
    const knownAt = new Date("2030-05-01T12:00:00Z");
    await client.list({
      page: 1,
      size: 5,
      appId: "app-1",
      categories: ["food", "health"],
      searchQuery: "tea",
      includeSuperseded: true,
      asOf: "2030-01-01T00:00:00Z",
      knownAt,
      memoryType: "episodic",
    });
    assert.deepEqual(Object.fromEntries(recorder.last().url.searchParams), {
      user_id: "list-filter-user",
      page: "1",
      size: "5",
      app_id: "app-1",
      categories: "food,health",
      search_query: "tea",
      include_superseded: "true",
      as_of: "2030-01-01T00:00:00Z",
      known_at: "2030-05-01T12:00:00.000Z",
      memory_type: "episodic",
    });
  });

  test("includeSuperseded false is simply not sent", async () => {
    const { client, recorder } = clientFor("list-flag-user");
    await client.list({ includeSuperseded: false });
    assert.equal(recorder.last().url.searchParams.has("include_superseded"), false);
  });
});

describe("a fact that changes", () => {
  test("SUPERSEDE keeps the old version, visible through includeSuperseded, asOf and history", async () => {
    const { client } = clientFor("supersede-user");
    const old = await client.add("My favourite colour is blue");
    const between = new Date();
    await new Promise((done) => setTimeout(done, 20));
    const current = await client.add("My favourite colour is green now");
    assert.equal(old.event, "ADD");
    assert.equal(current.event, "SUPERSEDE");
    assert.notEqual(current.id, old.id);

    const replaced = await client.get(old.id);
    assert.equal(replaced.isCurrent, false);
    assert.equal(replaced.supersededBy, current.id);
    assert.ok(Date.parse(replaced.invalidAt) >= between.getTime());

    assert.deepEqual((await client.list()).items.map((m) => m.id), [current.id]);
    const all = await client.list({ includeSuperseded: true });
    assert.deepEqual(all.items.map((m) => [m.id, m.isCurrent]), [[current.id, true], [old.id, false]]);
    assert.deepEqual((await client.list({ asOf: between })).items.map((m) => m.id), [old.id]);

    const history = await client.history(old.id);
    assert.equal(history.events[0].event, "ADD");
    const last = history.events[history.events.length - 1];
    assert.equal(last.event, "SUPERSEDE");
    assert.equal(last.detail.superseded_by, current.id);
  });
});

describe("get and history", () => {
  test("get returns the exact stored text and metadata", async () => {
    const { client, recorder } = clientFor("get-user");
    const startedAt = Date.now();
    const added = await client.add("Gus parks on level three", {
      metadata: { floor: 3 },
      app: "garage-app",
      infer: false,
    });
    const memory = await client.get(added.id);
    assert.equal(recorder.last().url.pathname, `/api/v1/memories/${added.id}`);
    assert.deepEqual(Object.fromEntries(recorder.last().url.searchParams), { user_id: "get-user" });
    assert.equal(memory.id, added.id);
    assert.equal(memory.text, "Gus parks on level three");
    assert.deepEqual(memory.metadata, { floor: 3 });
    assert.equal(memory.appName, "garage-app");
    assert.equal(memory.isCurrent, true);
    assert.equal(memory.supersededBy, null);
    assert.equal(memory.invalidAt, null);
    assertRecentIso(memory.createdAt, startedAt);
  });

  test("get is null for an unknown id, a non-UUID id, and another user's memory", async () => {
    const { client } = clientFor("get-missing-user");
    const { client: other } = clientFor("someone-else");
    const theirs = await other.add("Hana's locker code is private", { infer: false });
    assert.equal(await client.get("00000000-0000-4000-8000-000000000000"), null);
    assert.equal(await client.get("not a uuid/../x"), null);
    assert.equal(await client.get(theirs.id), null);
    assert.equal((await other.get(theirs.id)).text, "Hana's locker code is private");
  });

  test("history lists the memory's events, and is null for an unknown id", async () => {
    const { client, recorder } = clientFor("history-user");
    const startedAt = Date.now();
    const added = await client.add("Ivan's desk is by the window");
    const history = await client.history(added.id);
    assert.equal(recorder.last().url.pathname, `/api/v1/memories/${added.id}/history`);
    assert.equal(history.id, added.id);
    assert.equal(history.events[0].event, "ADD");
    assertRecentIso(history.events[0].at, startedAt);
    assert.equal(await client.history("00000000-0000-4000-8000-000000000000"), null);
  });
});

describe("delete", () => {
  test("removes memories from get, list and search; sends DELETE with a JSON body", async () => {
    const { client, recorder } = clientFor("delete-user");
    const keep = await client.add("Jun waters the plants on Fridays");
    const gone = await client.add("Jun's spare key is under the mat");
    const result = await client.delete([gone.id]);
    assert.equal(recorder.last().method, "DELETE");
    assert.equal(recorder.last().url.pathname, "/api/v1/memories");
    assert.deepEqual(recorder.last().body, { user_id: "delete-user", memory_ids: [gone.id] });
    assert.match(result.message, /1/);
    assert.equal(await client.get(gone.id), null);
    assert.deepEqual((await client.list()).items.map((m) => m.id), [keep.id]);
    const found = await client.search("spare key mat");
    assert.equal(found.results.some((r) => r.id === gone.id), false);
  });

  test("a single id string works, and unknown ids are not an error", async () => {
    const { client, recorder } = clientFor("delete-unknown-user");
    const result = await client.delete("00000000-0000-4000-8000-000000000000");
    assert.deepEqual(recorder.last().body, {
      user_id: "delete-unknown-user",
      memory_ids: ["00000000-0000-4000-8000-000000000000"],
    });
    assert.match(result.message, /0/);
  });
});

describe("addConversation", () => {
  test("distills facts from the turns and stores them under the session", async () => {
    const { client, recorder } = clientFor("conversation-user");
    const result = await client.addConversation(
      [
        { role: "user", content: "I moved to Lisbon last month and I work as a nurse.", uuid: "turn-1" },
        { role: "assistant", content: "Congratulations on the move!" },
      ],
      { sessionId: "thread-9", project: "travel", tags: ["profile"], transcriptPath: "/tmp/t.jsonl" },
    );
    assert.deepEqual(recorder.last().body, {
      user_id: "conversation-user",
      messages: [
        { role: "user", content: "I moved to Lisbon last month and I work as a nurse.", uuid: "turn-1" },
        { role: "assistant", content: "Congratulations on the move!" },
      ],
      tags: ["profile"],
      project: "travel",
      session_id: "thread-9",
      transcript_path: "/tmp/t.jsonl",
    });
    assert.equal(recorder.last().url.pathname, "/api/v1/memories/from-conversation");
    assert.equal(result.noFactsExtracted, false);
    assert.ok(result.results.length >= 1);
    for (const fact of result.results) {
      assert.equal(fact.event, "ADD");
      assert.notEqual(fact.memory, "");
      assert.equal(fact.error, null);
    }
    assert.ok(result.results.some((f) => /Lisbon/.test(f.memory)));
    const stored = await client.get(result.results[0].id);
    assert.equal(stored.sessionId, "thread-9");
    assert.equal(stored.project, "travel");
    assert.deepEqual(stored.tags, ["profile"]);
    assert.deepEqual(stored.sourceTurnUuids, ["turn-1"]);

    const inSession = await client.search("Lisbon", { sessionId: "thread-9" });
    assert.ok(inSession.results.some((r) => r.id === result.results[0].id));
    const otherSession = await client.search("Lisbon", { sessionId: "thread-other" });
    assert.deepEqual(otherSession.results, []);
  });

  test("small talk stores nothing and says so", async () => {
    const { client, recorder } = clientFor("small-talk-user");
    const result = await client.addConversation([{ role: "user", content: "ok thanks" }], { isAgentMemory: false });
    assert.deepEqual(recorder.last().body, {
      user_id: "small-talk-user",
      messages: [{ role: "user", content: "ok thanks" }],
      is_agent_memory: false,
    });
    assert.deepEqual(result, { results: [], noFactsExtracted: true });
    assert.equal((await client.list()).total, 0);
  });
});

test("the README's quickstart example runs as documented", async () => {
  const example = fileURLToPath(new URL("../examples/quickstart.mjs", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [example], {
    env: { ...process.env, CORTADEL_BASE_URL: server.baseUrl },
  });
  // The server normalizes the stored sentence (e.g. a final period), so the text lines are patterns.
  const lines = stdout.trimEnd().split("\n");
  const expected = [
    /^add: ADD$/,
    /^search: Alice prefers green tea in the morning\.?$/,
    /^list: 1 memories$/,
    /^get: Alice prefers green tea in the morning\.?$/,
    /^delete: Deleted 1 memory$/,
    /^get after delete: null$/,
  ];
  assert.equal(lines.length, expected.length, stdout);
  expected.forEach((pattern, i) => assert.match(lines[i], pattern));
});
