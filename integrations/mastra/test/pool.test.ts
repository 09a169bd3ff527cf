import { CortadelClient } from "@cortadel/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { CortadelClientPool, MAX_CACHED_CLIENTS, cortadelMemory } from "../src/index.js";
import { fakeClients, inputArgs } from "./helpers.js";

describe("CortadelClientPool", () => {
  it("creates one client per user id, lazily, and reuses it", () => {
    const clients = fakeClients();
    const pool = new CortadelClientPool({ createClient: clients.createClient });
    expect(pool.size).toBe(0);
    const first = pool.get("alice");
    expect(pool.get("alice")).toBe(first);
    pool.get("bob");
    expect(clients.created).toEqual(["alice", "bob"]);
    expect(pool.size).toBe(2);
  });

  it(`keeps the ${MAX_CACHED_CLIENTS} most recently used clients`, () => {
    expect(MAX_CACHED_CLIENTS).toBe(128);
    const clients = fakeClients();
    const pool = new CortadelClientPool({ createClient: clients.createClient });
    for (let i = 0; i < 128; i++) pool.get(`user-${i}`);
    pool.get("user-0"); // now the most recent; user-1 is the oldest
    pool.get("user-128");
    expect(pool.size).toBe(128);
    expect(pool.has("user-0")).toBe(true);
    expect(pool.has("user-1")).toBe(false);
    pool.get("user-1");
    expect(clients.created.filter((id) => id === "user-1")).toHaveLength(2);
    expect(pool.has("user-2")).toBe(false);
  });

  describe("the default client", () => {
    const saved = { ...process.env };
    afterEach(() => {
      process.env = { ...saved };
    });

    it("is a real CortadelClient bound to the user, with the given connection settings", () => {
      const client = new CortadelClientPool({ baseUrl: "http://memory.internal:3001/", timeoutMs: 2500 }).get("alice");
      expect(client).toBeInstanceOf(CortadelClient);
      const real = client as CortadelClient;
      expect([real.baseUrl, real.userId, real.timeoutMs]).toEqual(["http://memory.internal:3001", "alice", 2500]);
    });

    it("reads CORTADEL_BASE_URL and falls back to localhost:3001 with the SDK's 100 s timeout", () => {
      delete process.env.CORTADEL_BASE_URL;
      const local = new CortadelClientPool().get("alice") as CortadelClient;
      expect([local.baseUrl, local.timeoutMs]).toEqual(["http://localhost:3001", 100_000]);
      process.env.CORTADEL_BASE_URL = "http://from-env:9000";
      expect((new CortadelClientPool().get("alice") as CortadelClient).baseUrl).toBe("http://from-env:9000");
    });
  });
});

describe("cortadelMemory", () => {
  it("shares one pool between the processor and the tools", async () => {
    const clients = fakeClients();
    const memory = cortadelMemory({ createClient: clients.createClient });
    expect(memory.processor.pool).toBe(memory.pool);
    await memory.processor.processInput(inputArgs({ user: "release plans?", resourceId: "alice", threadId: "t" }));
    await memory.tools.search_memory.execute!({ query: "release" }, { agent: { resourceId: "alice", threadId: "t" } } as never);
    expect(clients.created).toEqual(["alice"]);
  });

  it("feeds one topK to both halves, and keeps their own defaults when unset", async () => {
    for (const [topK, expected] of [[3, [3, 3]], [undefined, [5, 10]]] as const) {
      const clients = fakeClients();
      const memory = cortadelMemory({ createClient: clients.createClient, topK });
      await memory.processor.processInput(inputArgs({ user: "release plans?", resourceId: "alice", threadId: "t" }));
      await memory.tools.search_memory.execute!({ query: "release" }, { agent: { resourceId: "alice", threadId: "t" } } as never);
      expect(clients.of("alice").searches.map((call) => call.options.topK)).toEqual(expected);
    }
  });

  it("feeds one timeoutMs to the SDK clients and the tool calls", async () => {
    const unset = cortadelMemory();
    expect((unset.pool.get("alice") as CortadelClient).timeoutMs).toBe(100_000);
    const set = cortadelMemory({ timeoutMs: 2500 });
    expect((set.pool.get("alice") as CortadelClient).timeoutMs).toBe(2500);

    const clients = fakeClients();
    clients.of("alice").onSearch = () => new Promise(() => {});
    const fast = cortadelMemory({ createClient: clients.createClient, timeoutMs: 30, onError: () => {} });
    const output = await fast.tools.search_memory.execute!({ query: "release" }, { agent: { resourceId: "alice", threadId: "t" } } as never);
    expect(output).toEqual({ memories: [], count: 0, error: "Cortadel request timed out after 30 ms" });
  });
});
