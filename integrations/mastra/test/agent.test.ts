import { Agent } from "@mastra/core/agent";
import { describe, expect, it } from "vitest";
import { cortadelMemory, DEFAULT_MEMORY_HEADER, type CortadelTools } from "../src/index.js";
import { added, errorLog, fakeClients, memory } from "./helpers.js";
import { stubModel, systemTexts, toolOutputs, type Step } from "./stub-model.js";

function agentWith(script: Step[], rename = false) {
  const clients = fakeClients();
  const log = errorLog();
  const memory = cortadelMemory({ createClient: clients.createClient, onError: log.onError });
  const { model, prompts } = stubModel(script);
  const tools: Record<string, CortadelTools[keyof CortadelTools]> = rename
    ? { recall_memory: memory.tools.search_memory }
    : { ...memory.tools };
  const agent = new Agent({
    id: "assistant",
    name: "assistant",
    instructions: "You are a helpful assistant with long-term memory.",
    model,
    tools,
    inputProcessors: [memory.processor],
    outputProcessors: [memory.processor],
  });
  return { agent, prompts, clients, log };
}

describe("a real Mastra Agent with the memory processor (fake Cortadel client)", () => {
  it("recalls into one appended system message and writes the finished turn", async () => {
    const { agent, prompts, clients, log } = agentWith([{ text: "Noted." }, { text: "Not on a Friday." }]);
    const alice = clients.of("e2e-mastra-alice");
    alice.onSearch = async ({ query }) =>
      query.includes("Friday") ? [memory("m1", "User only ships to production on Tuesdays.")] : [];

    const first = await agent.generate("I only ship to production on Tuesdays.", {
      memory: { resource: "e2e-mastra-alice", thread: "thread-1" },
    });
    expect(first.text).toBe("Noted.");
    expect(alice.conversations.map((call) => [call.messages, call.options])).toEqual([
      [
        [
          { role: "user", content: "I only ship to production on Tuesdays." },
          { role: "assistant", content: "Noted." },
        ],
        { sessionId: "thread-1" },
      ],
    ]);
    expect(systemTexts(prompts[0]!)).toEqual(["You are a helpful assistant with long-term memory."]);

    const second = await agent.generate("Can we cut a release this Friday?", {
      memory: { resource: "e2e-mastra-alice", thread: "thread-2" },
    });
    expect(second.text).toBe("Not on a Friday.");
    expect(systemTexts(prompts[1]!)).toEqual([
      "You are a helpful assistant with long-term memory.",
      `${DEFAULT_MEMORY_HEADER}\n- User only ships to production on Tuesdays. (recorded 2026-11-02T09:30:00Z)`,
    ]);
    const userTurn = prompts[1]!.filter((message) => message.role === "user");
    expect(userTurn).toHaveLength(1);
    expect((userTurn[0]!.content as Array<{ text: string }>)[0]!.text).toBe("Can we cut a release this Friday?");
    expect(alice.searches.map((call) => call.options.sessionId)).toEqual([undefined, undefined]);
    expect(log.entries).toEqual([]);
  });

  it("runs the memory tools the model calls, under the key it was registered as", async () => {
    const { agent, prompts, clients } = agentWith(
      [{ tool: "recall_memory", input: { query: "release day", topK: 2 } }, { text: "Tuesdays." }],
      true,
    );
    const bob = clients.of("bob");
    bob.onSearch = async () => [memory("m9", "User ships on Tuesdays.", { rrfScore: 0.03 })];
    const result = await agent.generate("When do I ship?", { memory: { resource: "bob", thread: "b-1" } });
    expect(result.text).toBe("Tuesdays.");
    expect(bob.searches.at(-1)!.query).toBe("release day");
    expect(bob.searches.at(-1)!.options.topK).toBe(2);
    expect(toolOutputs(prompts[1]!)).toEqual([
      { memories: [{ id: "m9", content: "User ships on Tuesdays.", score: 0.03, createdAt: "2026-11-02T09:30:00Z" }], count: 1 },
    ]);
  });

  it("stores what add_memories is given and shows the model each event", async () => {
    const { agent, prompts, clients } = agentWith([
      { tool: "add_memories", input: { statements: ["User's team is called Atlas."] } },
      { text: "Saved." },
    ]);
    const carol = clients.of("carol");
    carol.onAdd = async ({ text }) => added(text, "ADD", "m42");
    await agent.generate("Remember that my team is Atlas.", { memory: { resource: "carol", thread: "c-1" } });
    expect(carol.adds.map((call) => [call.text, call.options])).toEqual([["User's team is called Atlas.", { app: "cortadel-mastra" }]]);
    expect(toolOutputs(prompts[1]!)).toEqual([
      { stored: [{ text: "User's team is called Atlas.", id: "m42", event: "ADD" }], count: 1 },
    ]);
  });

  it("keeps the agent working when Cortadel is down", async () => {
    const { agent, prompts, clients, log } = agentWith([{ text: "Happy to help." }]);
    const dave = clients.of("dave");
    dave.onSearch = async () => {
      throw new Error("ECONNREFUSED");
    };
    dave.onConversation = async () => {
      throw new Error("ECONNREFUSED");
    };
    const result = await agent.generate("Can we cut a release this Friday?", { memory: { resource: "dave", thread: "d-1" } });
    expect(result.text).toBe("Happy to help.");
    expect(systemTexts(prompts[0]!)).toHaveLength(1);
    expect(log.entries.map((entry) => entry.context.operation)).toEqual(["recall", "persist"]);
  });

  it("works the same through agent.stream", async () => {
    const { agent, prompts, clients } = agentWith([{ text: "Tuesday " }]);
    const erin = clients.of("erin");
    erin.onSearch = async () => [memory("m5", "User only ships to production on Tuesdays.")];
    const stream = await agent.stream("Can we cut a release this Friday?", { memory: { resource: "erin", thread: "e-2" } });
    expect(await stream.text).toBe("Tuesday ");
    await stream.consumeStream?.();
    expect(systemTexts(prompts[0]!)[1]).toBe(
      `${DEFAULT_MEMORY_HEADER}\n- User only ships to production on Tuesdays. (recorded 2026-11-02T09:30:00Z)`,
    );
    expect(erin.conversations.map((call) => call.messages)).toEqual([
      [
        { role: "user", content: "Can we cut a release this Friday?" },
        { role: "assistant", content: "Tuesday" },
      ],
    ]);
  });
});
