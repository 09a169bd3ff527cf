// End to end against a real Cortadel server (started here from the repo's Python package), a real
// Mastra Agent and a scripted stand-in for the language model.
import { CortadelClient } from "@cortadel/sdk";
import { Agent } from "@mastra/core/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../../../tools/test-server.mjs";
import { cortadelMemory, DEFAULT_MEMORY_HEADER, type CortadelMemoryOptions } from "../src/index.js";
import { errorLog } from "./helpers.js";
import { stubModel, systemTexts, toolOutputs, type Step } from "./stub-model.js";

let server: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
});

function assistant(script: Step[], options: CortadelMemoryOptions = {}) {
  const log = errorLog();
  const memory = cortadelMemory({ baseUrl: server.baseUrl, onError: log.onError, throwOnError: true, ...options });
  const { model, prompts } = stubModel(script);
  const agent = new Agent({
    id: "assistant",
    name: "assistant",
    instructions: "You are a helpful assistant with long-term memory.",
    model,
    tools: { ...memory.tools },
    inputProcessors: [memory.processor],
    outputProcessors: [memory.processor],
  });
  return { agent, prompts, log };
}

describe("live: @cortadel/mastra against a running Cortadel server", () => {
  it("carries a fact stated in thread-1 into a brand-new thread-2", async () => {
    const { agent, prompts, log } = assistant([{ text: "Noted: production releases happen on Tuesdays." }, { text: "Not this Friday." }]);
    const api = new CortadelClient({ baseUrl: server.baseUrl, userId: "e2e-mastra-alice" });

    await agent.generate("I only ship to production on Tuesdays.", { memory: { resource: "e2e-mastra-alice", thread: "thread-1" } });

    // The finished turn reached the server, distilled and filed under thread-1.
    const stored = await api.list();
    expect(stored.items.map((item) => item.content)).toEqual(["User only ships to production on Tuesdays."]);
    const inThread1 = await api.search("ship production Tuesdays", { sessionId: "thread-1" });
    expect(inThread1.results.map((result) => result.id)).toEqual([stored.items[0]!.id]);
    expect((await api.search("ship production Tuesdays", { sessionId: "thread-2" })).results).toEqual([]);

    // What the processor should find for the next question, asked of the server directly.
    const expected = await api.search("Can we cut a release this Friday?", { topK: 5, mode: "hybrid" });
    expect(expected.results.map((result) => result.content)).toEqual(["User only ships to production on Tuesdays."]);
    const hit = expected.results[0]!;

    const answer = await agent.generate("Can we cut a release this Friday?", { memory: { resource: "e2e-mastra-alice", thread: "thread-2" } });
    expect(answer.text).toBe("Not this Friday.");
    const system = systemTexts(prompts[1]!);
    expect(system).toEqual([
      "You are a helpful assistant with long-term memory.",
      `${DEFAULT_MEMORY_HEADER}\n- ${hit.gist || hit.content} (recorded ${hit.createdAt})`,
    ]);
    // The line shows the server's gist of the fact when it has one (a headline without the period).
    expect(system[1]).toContain("- User only ships to production on Tuesdays");
    const recordedAt = Date.parse(hit.createdAt!);
    expect(Date.now() - recordedAt).toBeGreaterThanOrEqual(0);
    expect(Date.now() - recordedAt).toBeLessThan(120_000);
    expect(log.entries).toEqual([]);
  });

  it("lets the model store memories with add_memories and find them with search_memory", async () => {
    const { agent, prompts, log } = assistant([
      { tool: "add_memories", input: { statements: ["User's team is called Atlas."] } },
      { tool: "search_memory", input: { query: "Which team is the user on?" } },
      { text: "Your team is Atlas." },
    ]);
    const api = new CortadelClient({ baseUrl: server.baseUrl, userId: "e2e-mastra-bob" });

    const answer = await agent.generate("Please remember that my team is called Atlas.", {
      memory: { resource: "e2e-mastra-bob", thread: "bob-1" },
    });
    expect(answer.text).toBe("Your team is Atlas.");

    const [addOutput] = toolOutputs(prompts[1]!) as Array<{ stored: Array<{ text: string; id: string; event: string }>; count: number }>;
    expect(addOutput!.count).toBe(1);
    expect(addOutput!.stored).toHaveLength(1);
    const { id, event, text } = addOutput!.stored[0]!;
    expect([text, event]).toEqual(["User's team is called Atlas.", "ADD"]);
    const saved = await api.get(id);
    expect(saved?.text).toBe("User's team is called Atlas.");
    expect(saved?.appName).toBe("cortadel-mastra");

    const [, searchOutput] = toolOutputs(prompts[2]!) as [unknown, { memories: Array<{ id: string; content: string; score: number }>; count: number }];
    expect(searchOutput.memories[0]!.id).toBe(id);
    expect(searchOutput.memories[0]!.content).toBe("User's team is called Atlas.");
    expect(searchOutput.memories[0]!.score).toBeGreaterThan(0);
    expect(log.entries).toEqual([]);
  });
});
