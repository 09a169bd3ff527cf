import { CortadelTimeoutError } from "@cortadel/sdk";
import { MASTRA_RESOURCE_ID_KEY, MASTRA_THREAD_ID_KEY, RequestContext } from "@mastra/core/request-context";
import type { ToolExecutionContext } from "@mastra/core/tools";
import { describe, expect, it } from "vitest";
import { createCortadelTools, type CortadelToolsOptions } from "../src/index.js";
import { added, errorLog, fakeClients, memory, type FakeClient } from "./helpers.js";

function setup(options: CortadelToolsOptions = {}) {
  const clients = fakeClients();
  const log = errorLog();
  const tools = createCortadelTools({ createClient: clients.createClient, onError: log.onError, ...options });
  const alice: FakeClient = clients.of("alice");
  return { tools, alice, clients, log };
}

const asAlice = { agent: { agentId: "assistant", toolCallId: "call-1", messages: [], suspend: async () => {}, resourceId: "alice", threadId: "thread-2" } } as unknown as ToolExecutionContext;

type Executable<I> = { execute?: (input: I, context: ToolExecutionContext) => Promise<unknown> };
function run<I>(tool: Executable<I>, input: I, context: ToolExecutionContext = asAlice): Promise<unknown> {
  return tool.execute!(input, context);
}

describe("search_memory", () => {
  it("searches as the calling agent's resource and returns the memories with their scores", async () => {
    const { tools, alice, log } = setup();
    alice.onSearch = async () => [
      memory("m1", "User only ships to production on Tuesdays.", { rrfScore: 0.0328, categories: ["work"] }),
      memory("m2", "User's team is Atlas.", { rrfScore: 0.0161, createdAt: null }),
    ];
    const output = await run(tools.search_memory, { query: "release days" });
    expect(alice.searches[0]!.query).toBe("release days");
    expect(alice.searches[0]!.options).toEqual({ topK: 10, mode: "hybrid", appName: "cortadel-mastra" });
    expect(output).toEqual({
      memories: [
        { id: "m1", content: "User only ships to production on Tuesdays.", score: 0.0328, createdAt: "2026-11-02T09:30:00Z", categories: ["work"] },
        { id: "m2", content: "User's team is Atlas.", score: 0.0161 },
      ],
      count: 2,
    });
    expect(log.entries).toEqual([]);
  });

  it("takes the model's topK over the configured one, and applies mode, rerank and session scope", async () => {
    const { tools, alice } = setup({ topK: 4, searchMode: "vector", rerank: true, scopeRecallToSession: true });
    await run(tools.search_memory, { query: "release days" });
    await run(tools.search_memory, { query: "release days", topK: 2 });
    expect(alice.searches.map((call) => call.options)).toEqual([
      { topK: 4, mode: "vector", appName: "cortadel-mastra", rerank: "cross_encoder", sessionId: "thread-2" },
      { topK: 2, mode: "vector", appName: "cortadel-mastra", rerank: "cross_encoder", sessionId: "thread-2" },
    ]);
  });

  it("falls back to the RequestContext keys when the call has no agent ids", async () => {
    const { tools, clients } = setup({ scopeRecallToSession: true });
    const requestContext = new RequestContext();
    requestContext.set(MASTRA_RESOURCE_ID_KEY as never, "carol");
    requestContext.set(MASTRA_THREAD_ID_KEY as never, "carol-thread");
    await run(tools.search_memory, { query: "release days" }, { requestContext } as ToolExecutionContext);
    expect(clients.created).toEqual(["carol"]);
    expect(clients.of("carol").searches[0]!.options.sessionId).toBe("carol-thread");
  });

  it("uses the same user id precedence as the processor", async () => {
    const { tools, clients } = setup({ userId: "pinned", resolveUserId: (scope) => (scope.threadId === "thread-2" ? "from-resolver" : undefined) });
    await run(tools.search_memory, { query: "release days" });
    await run(tools.search_memory, { query: "release days" }, { agent: { resourceId: "alice", threadId: "other" } } as unknown as ToolExecutionContext);
    expect(clients.created).toEqual(["from-resolver", "pinned"]);
  });

  it("returns an error field instead of throwing", async () => {
    const { tools, alice, log } = setup();
    const boom = new Error("connection refused");
    alice.onSearch = async () => {
      throw boom;
    };
    expect(await run(tools.search_memory, { query: "release days" })).toEqual({ memories: [], count: 0, error: "connection refused" });
    expect(log.entries).toEqual([{ error: boom, context: { operation: "search-tool", userId: "alice", threadId: "thread-2" } }]);
  });

  it("times out after timeoutMs", async () => {
    const { tools, alice, log } = setup({ timeoutMs: 40 });
    alice.onSearch = () => new Promise(() => {});
    const output = await run(tools.search_memory, { query: "release days" });
    expect(output).toEqual({ memories: [], count: 0, error: "Cortadel request timed out after 40 ms" });
    expect(log.entries[0]!.error).toBeInstanceOf(CortadelTimeoutError);
  });

  it("reports a missing user id in the result", async () => {
    const { tools, log } = setup();
    const output = await run(tools.search_memory, { query: "release days" }, {} as ToolExecutionContext);
    expect(output).toEqual({ memories: [], count: 0, error: "Memory is unavailable: no user id for this conversation." });
    expect(log.entries.map((entry) => entry.context.operation)).toEqual(["resolve-user-id"]);
  });

  it("throws with throwOnError", async () => {
    const { tools, alice } = setup({ throwOnError: true });
    alice.onSearch = async () => {
      throw new Error("connection refused");
    };
    await expect(run(tools.search_memory, { query: "release days" })).rejects.toThrow("connection refused");
  });
});

describe("add_memories", () => {
  it("writes every statement under the app name and reports each one's event", async () => {
    const { tools, alice } = setup({ appName: "release-bot" });
    alice.onAdd = async ({ text }) =>
      text.includes("Tuesdays") ? added(text, "SKIP_DUPLICATE", "m1") : added(text, "ADD", "m7");
    const output = await run(tools.add_memories, { statements: ["User ships on Tuesdays.", "User's team is Atlas."] });
    expect(alice.adds.map((call) => [call.text, call.options])).toEqual([
      ["User ships on Tuesdays.", { app: "release-bot" }],
      ["User's team is Atlas.", { app: "release-bot" }],
    ]);
    expect(output).toEqual({
      stored: [
        { text: "User ships on Tuesdays.", id: "m1", event: "SKIP_DUPLICATE" },
        { text: "User's team is Atlas.", id: "m7", event: "ADD" },
      ],
      count: 2,
    });
  });

  it("marks a failed statement and counts only the ones written", async () => {
    const { tools, alice, log } = setup();
    alice.onAdd = async ({ text }) => {
      if (text.startsWith("bad")) throw new Error("validation failed");
      if (text.startsWith("odd")) return added(text, "ERROR", "", "embedding provider unavailable");
      return text.startsWith("mute") ? added(text, "ERROR", "") : added(text, "ADD", "m2");
    };
    const output = await run(tools.add_memories, { statements: ["bad one", "good one", "odd one", "mute one"] });
    expect(output).toEqual({
      stored: [
        { text: "bad one", error: "validation failed" },
        { text: "good one", id: "m2", event: "ADD" },
        { text: "odd one", event: "ERROR", error: "embedding provider unavailable" },
        { text: "mute one", event: "ERROR", error: "Cortadel could not store this statement." },
      ],
      count: 1,
    });
    expect(log.entries.map((entry) => entry.context.operation)).toEqual(["add-tool"]);
  });

  it("with throwOnError throws on the first failure after every write has gone out", async () => {
    const { tools, alice } = setup({ throwOnError: true });
    alice.onAdd = async ({ text }) => {
      if (text === "second") throw new Error("rejected second");
      return added(text);
    };
    await expect(run(tools.add_memories, { statements: ["first", "second", "third"] })).rejects.toThrow("rejected second");
    expect(alice.adds.map((call) => call.text)).toEqual(["first", "second", "third"]);
  });
});

describe("tool ids", () => {
  it("are the model-facing names by default and take an idPrefix", () => {
    const plain = setup().tools;
    expect([plain.search_memory.id, plain.add_memories.id]).toEqual(["search_memory", "add_memories"]);
    const prefixed = setup({ idPrefix: "memory" }).tools;
    expect([prefixed.search_memory.id, prefixed.add_memories.id]).toEqual(["memory_search_memory", "memory_add_memories"]);
  });
});
