import { CortadelAbortError, CortadelTimeoutError } from "@cortadel/sdk";
import { describe, expect, it } from "vitest";
import { CortadelMemoryProcessor, DEFAULT_MEMORY_HEADER, type CortadelMemoryProcessorOptions } from "../src/index.js";
import { errorLog, fakeClients, inputArgs, memory, sleep, type FakeClient } from "./helpers.js";

const turn = { user: "Can we cut a release this Friday?", resourceId: "alice", threadId: "thread-2" };

function setup(options: CortadelMemoryProcessorOptions = {}) {
  const clients = fakeClients();
  const log = errorLog();
  const processor = new CortadelMemoryProcessor({ createClient: clients.createClient, onError: log.onError, ...options });
  const alice: FakeClient = clients.of("alice");
  alice.onSearch = async () => [memory("m1", "User only ships to production on Tuesdays.")];
  return { processor, alice, clients, log };
}

function systemMessagesOf(result: unknown) {
  return (result as { systemMessages: Array<{ role: string; content: string }> }).systemMessages;
}

describe("processInput: recall", () => {
  it("appends one system message with the recalled memories and leaves the conversation alone", async () => {
    const { processor, alice, log } = setup();
    const args = inputArgs(turn);
    const result = await processor.processInput(args);

    expect(alice.searches).toHaveLength(1);
    expect(alice.searches[0]!.query).toBe("Can we cut a release this Friday?");
    expect(alice.searches[0]!.options).toEqual({ topK: 5, mode: "hybrid", appName: "cortadel-mastra" });
    expect(result).toEqual({
      messages: args.messages,
      systemMessages: [
        { role: "system", content: "You are a release assistant." },
        {
          role: "system",
          content: `${DEFAULT_MEMORY_HEADER}\n- User only ships to production on Tuesdays. (recorded 2026-11-02T09:30:00Z)`,
        },
      ],
    });
    expect((result as { messages: unknown }).messages).toBe(args.messages);
    expect(log.entries).toEqual([]);
  });

  it("prefers a memory's gist, omits a missing date and uses a custom header", async () => {
    const { processor, alice } = setup({ header: "Known about the user:" });
    alice.onSearch = async () => [
      memory("m1", "The user said they only deploy to prod on Tuesdays, never Fridays.", { gist: "Deploys only on Tuesdays" }),
      memory("m2", "User's team is called Atlas.", { createdAt: null }),
    ];
    const result = await processor.processInput(inputArgs(turn));
    expect(systemMessagesOf(result).at(-1)!.content).toBe(
      "Known about the user:\n- Deploys only on Tuesdays (recorded 2026-11-02T09:30:00Z)\n- User's team is called Atlas.",
    );
  });

  it("passes topK, searchMode, rerank and memoryType through to the search", async () => {
    const { processor, alice } = setup({ topK: 3, searchMode: "text", rerank: true, memoryType: "semantic", appName: "billing-bot" });
    await processor.processInput(inputArgs(turn));
    expect(alice.searches[0]!.options).toEqual({
      topK: 3,
      mode: "text",
      rerank: "cross_encoder",
      memoryType: "semantic",
      appName: "billing-bot",
    });
  });

  it("searches across threads by default and only within the thread with scopeRecallToSession", async () => {
    const scoped = setup({ scopeRecallToSession: true });
    await scoped.processor.processInput(inputArgs(turn));
    expect(scoped.alice.searches[0]!.options.sessionId).toBe("thread-2");

    const open = setup();
    await open.processor.processInput(inputArgs(turn));
    expect(open.alice.searches[0]!.options).not.toHaveProperty("sessionId");
  });

  it("ignores scopeRecallToSession on a run without a thread", async () => {
    const { processor, alice } = setup({ scopeRecallToSession: true, userId: "alice" });
    await processor.processInput(inputArgs({ user: turn.user }));
    expect(alice.searches).toHaveLength(1);
    expect(alice.searches[0]!.options).not.toHaveProperty("sessionId");
  });

  it("skips the search for a message shorter than minQueryLength", async () => {
    const { processor, alice } = setup();
    const args = inputArgs({ ...turn, user: "ok" });
    expect(await processor.processInput(args)).toBe(args.messages);
    expect(alice.searches).toHaveLength(0);

    const strict = setup({ minQueryLength: 40 });
    await strict.processor.processInput(inputArgs(turn)); // 33 characters
    expect(strict.alice.searches).toHaveLength(0);
  });

  it("does nothing with recall: false", async () => {
    const { processor, alice } = setup({ recall: false });
    const args = inputArgs(turn);
    expect(await processor.processInput(args)).toBe(args.messages);
    expect(alice.searches).toHaveLength(0);
  });

  it("adds no system message when nothing is found", async () => {
    const { processor, alice } = setup();
    alice.onSearch = async () => [];
    const args = inputArgs(turn);
    expect(await processor.processInput(args)).toBe(args.messages);
  });
});

describe("processInput: once per thread", () => {
  it("does not inject a memory twice in a thread, but does in another thread", async () => {
    const { processor, alice } = setup();
    alice.onSearch = async () => [memory("m1", "Ships on Tuesdays."), memory("m2", "Team Atlas.")];
    await processor.processInput(inputArgs(turn));

    alice.onSearch = async () => [memory("m1", "Ships on Tuesdays."), memory("m3", "Uses pnpm.")];
    const second = await processor.processInput(inputArgs(turn));
    expect(systemMessagesOf(second).at(-1)!.content).toBe(`${DEFAULT_MEMORY_HEADER}\n- Uses pnpm. (recorded 2026-11-02T09:30:00Z)`);

    const third = inputArgs(turn);
    expect(await processor.processInput(third)).toBe(third.messages); // m1 and m3 both seen already

    const otherThread = await processor.processInput(inputArgs({ ...turn, threadId: "thread-3" }));
    expect(systemMessagesOf(otherThread).at(-1)!.content).toContain("- Ships on Tuesdays.");
  });

  it("does not dedupe runs without a thread, which share no history", async () => {
    const { processor } = setup({ userId: "alice" });
    await processor.processInput(inputArgs({ user: turn.user }));
    const again = await processor.processInput(inputArgs({ user: turn.user }));
    expect(systemMessagesOf(again).at(-1)!.content).toContain("- User only ships to production on Tuesdays.");
  });

  it("re-injects every turn with dedupeAcrossTurns: false", async () => {
    const { processor } = setup({ dedupeAcrossTurns: false });
    await processor.processInput(inputArgs(turn));
    const again = await processor.processInput(inputArgs(turn));
    expect(systemMessagesOf(again).at(-1)!.content).toContain("- User only ships to production on Tuesdays.");
  });

  it("forgets the oldest ids beyond maxTrackedPerThread", async () => {
    const { processor, alice } = setup({ maxTrackedPerThread: 2 });
    for (const id of ["a", "b", "c"]) {
      alice.onSearch = async () => [memory(id, `fact ${id}`)];
      await processor.processInput(inputArgs(turn));
    }
    alice.onSearch = async () => [memory("a", "fact a"), memory("b", "fact b"), memory("c", "fact c")];
    const result = await processor.processInput(inputArgs(turn));
    expect(systemMessagesOf(result).at(-1)!.content).toBe(`${DEFAULT_MEMORY_HEADER}\n- fact a (recorded 2026-11-02T09:30:00Z)`);
  });

  it("forgets the least recently active thread beyond maxTrackedThreads", async () => {
    const { processor } = setup({ maxTrackedThreads: 2 });
    for (const threadId of ["t1", "t2", "t3"]) await processor.processInput(inputArgs({ ...turn, threadId }));
    const t1 = await processor.processInput(inputArgs({ ...turn, threadId: "t1" }));
    expect(systemMessagesOf(t1)).toHaveLength(2); // t1 was dropped, so m1 is new to it again
    const t3Args = inputArgs({ ...turn, threadId: "t3" });
    expect(await processor.processInput(t3Args)).toBe(t3Args.messages); // t3 is still tracked
  });
});

describe("processInput: failure is a no-op", () => {
  it("reports a failed search to onError and returns the messages untouched", async () => {
    const { processor, alice, log } = setup();
    const boom = new Error("connection refused");
    alice.onSearch = async () => {
      throw boom;
    };
    const args = inputArgs(turn);
    expect(await processor.processInput(args)).toBe(args.messages);
    expect(log.entries).toEqual([{ error: boom, context: { operation: "recall", userId: "alice", threadId: "thread-2" } }]);
  });

  it("rethrows after onError with throwOnError", async () => {
    const { processor, alice, log } = setup({ throwOnError: true });
    alice.onSearch = async () => {
      throw new Error("connection refused");
    };
    await expect(processor.processInput(inputArgs(turn))).rejects.toThrow("connection refused");
    expect(log.entries.map((entry) => entry.context.operation)).toEqual(["recall"]);
  });

  it("gives up after recallTimeoutMs and aborts the search's signal", async () => {
    const { processor, alice, log } = setup({ recallTimeoutMs: 60 });
    alice.onSearch = () => new Promise(() => {}); // never answers, ignores the signal
    const args = inputArgs(turn);
    const started = Date.now();
    expect(await processor.processInput(args)).toBe(args.messages);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(55);
    expect(elapsed).toBeLessThan(1000);
    expect(alice.searches[0]!.signal!.aborted).toBe(true);
    const [entry] = log.entries;
    expect(entry!.error).toBeInstanceOf(CortadelTimeoutError);
    expect((entry!.error as CortadelTimeoutError).timeoutMs).toBe(60);
    expect(entry!.context.operation).toBe("recall");
  });

  it("waits as long as it takes with recallTimeoutMs: 0", async () => {
    const { processor, alice, log } = setup({ recallTimeoutMs: 0 });
    alice.onSearch = async () => {
      await sleep(80);
      return [memory("m1", "Slow but found.")];
    };
    const result = await processor.processInput(inputArgs(turn));
    expect(systemMessagesOf(result).at(-1)!.content).toContain("- Slow but found.");
    expect(log.entries).toEqual([]);
  });

  it("stops when the agent run is aborted", async () => {
    const { processor, alice, log } = setup();
    alice.onSearch = () => new Promise(() => {});
    const run = new AbortController();
    const pending = processor.processInput(inputArgs({ ...turn, abortSignal: run.signal }));
    await sleep(10);
    run.abort(new Error("user pressed stop"));
    const args = await pending;
    expect(Array.isArray(args)).toBe(true);
    expect(log.entries[0]!.error).toBeInstanceOf(CortadelAbortError);
    expect(alice.searches[0]!.signal!.aborted).toBe(true);
  });

  it("warns on the console when no onError is given", async () => {
    const clients = fakeClients();
    clients.of("alice").onSearch = async () => {
      throw new Error("server down");
    };
    const processor = new CortadelMemoryProcessor({ createClient: clients.createClient });
    const warnings: unknown[][] = [];
    const original = console.warn;
    console.warn = (...args: unknown[]) => warnings.push(args);
    try {
      await processor.processInput(inputArgs(turn));
    } finally {
      console.warn = original;
    }
    expect(warnings).toEqual([["[@cortadel/mastra] recall failed: server down"]]);
  });
});

describe("options", () => {
  it("rejects a topK outside 1–50 and negative timeouts", () => {
    expect(() => new CortadelMemoryProcessor({ topK: 0 })).toThrow(RangeError);
    expect(() => new CortadelMemoryProcessor({ topK: 51 })).toThrow("topK must be an integer 1–50, got 51");
    expect(() => new CortadelMemoryProcessor({ recallTimeoutMs: -1 })).toThrow(RangeError);
  });

  it("has the documented id and takes another", () => {
    expect(new CortadelMemoryProcessor().id).toBe("cortadel-memory");
    expect(new CortadelMemoryProcessor({ id: "memory-2" }).id).toBe("memory-2");
  });
});
