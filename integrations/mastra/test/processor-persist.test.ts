import { CortadelTimeoutError } from "@cortadel/sdk";
import { describe, expect, it } from "vitest";
import { CortadelMemoryProcessor, type CortadelMemoryProcessorOptions } from "../src/index.js";
import { deferred, errorLog, fakeClients, outputArgs, sleep, type FakeClient } from "./helpers.js";

const turn = { user: "I only ship to production on Tuesdays.", reply: "Noted: Tuesdays only.", resourceId: "alice", threadId: "thread-1" };
const written = [
  { role: "user", content: "I only ship to production on Tuesdays." },
  { role: "assistant", content: "Noted: Tuesdays only." },
];

function setup(options: CortadelMemoryProcessorOptions = {}) {
  const clients = fakeClients();
  const log = errorLog();
  const processor = new CortadelMemoryProcessor({ createClient: clients.createClient, onError: log.onError, ...options });
  const alice: FakeClient = clients.of("alice");
  return { processor, alice, log };
}

const failing = (message: string) => async () => {
  throw new Error(message);
};

describe("processOutputResult: the write", () => {
  it("sends the user message and the reply with the thread as session, and passes the messages through", async () => {
    const { processor, alice, log } = setup();
    const args = outputArgs(turn);
    expect(await processor.processOutputResult(args)).toBe(args.messages);
    expect(alice.conversations).toHaveLength(1);
    expect(alice.conversations[0]!.messages).toEqual(written);
    expect(alice.conversations[0]!.options).toEqual({ sessionId: "thread-1" });
    expect(log.entries).toEqual([]);
  });

  it("stamps project, tags and isAgentMemory when set", async () => {
    const { processor, alice } = setup({ project: "billing-api", tags: ["release", "ops"], isAgentMemory: true });
    await processor.processOutputResult(outputArgs(turn));
    expect(alice.conversations[0]!.options).toEqual({
      sessionId: "thread-1",
      project: "billing-api",
      tags: ["release", "ops"],
      isAgentMemory: true,
    });
  });

  it("writes nothing with persist: false", async () => {
    const { processor, alice } = setup({ persist: false });
    await processor.processOutputResult(outputArgs(turn));
    expect(alice.conversations).toHaveLength(0);
  });

  it("waits for the write by default", async () => {
    const { processor, alice } = setup();
    const gate = deferred<void>();
    alice.onConversation = async () => {
      await gate.promise;
      return { results: [], noFactsExtracted: true };
    };
    let finished = false;
    const pending = processor.processOutputResult(outputArgs(turn)).then(() => (finished = true));
    await sleep(20);
    expect(finished).toBe(false);
    gate.resolve();
    await pending;
    expect(finished).toBe(true);
  });

  it("returns at once with awaitPersist: false and still reports a failure, without throwing", async () => {
    const { processor, alice, log } = setup({ awaitPersist: false, throwOnError: true });
    const gate = deferred<void>();
    alice.onConversation = async () => {
      await gate.promise;
      throw new Error("server went away");
    };
    const args = outputArgs(turn);
    expect(await processor.processOutputResult(args)).toBe(args.messages);
    expect(log.entries).toEqual([]);
    gate.resolve();
    await sleep(10);
    expect(log.entries.map((entry) => [entry.context, (entry.error as Error).message])).toEqual([
      [{ operation: "persist", userId: "alice", threadId: "thread-1" }, "server went away"],
    ]);
    alice.onConversation = async () => ({ results: [], noFactsExtracted: true });
    await processor.processOutputResult(outputArgs(turn));
    await sleep(10);
    expect(alice.conversations).toHaveLength(2); // the failed turn was released, so it is written again
  });

  it("reports a failed write and carries on; throwOnError rethrows it", async () => {
    const quiet = setup();
    quiet.alice.onConversation = failing("disk full");
    const args = outputArgs(turn);
    expect(await quiet.processor.processOutputResult(args)).toBe(args.messages);
    expect(quiet.log.entries.map((entry) => entry.context.operation)).toEqual(["persist"]);

    const strict = setup({ throwOnError: true });
    strict.alice.onConversation = failing("disk full");
    await expect(strict.processor.processOutputResult(outputArgs(turn))).rejects.toThrow("disk full");
    expect(strict.log.entries).toHaveLength(1);
  });

  it("gives up after persistTimeoutMs", async () => {
    const { processor, alice, log } = setup({ persistTimeoutMs: 50 });
    alice.onConversation = () => new Promise(() => {});
    const started = Date.now();
    await processor.processOutputResult(outputArgs(turn));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(log.entries[0]!.error).toBeInstanceOf(CortadelTimeoutError);
    expect(alice.conversations[0]!.signal!.aborted).toBe(true);
  });

  it("stores only the user message when the model produced no text", async () => {
    const { processor, alice } = setup();
    await processor.processOutputResult(outputArgs({ ...turn, reply: "" }));
    expect(alice.conversations[0]!.messages).toEqual([written[0]]);
  });
});

describe("processOutputResult: the duplicate-turn latch", () => {
  it("skips a turn that was already written", async () => {
    const { processor, alice } = setup();
    await processor.processOutputResult(outputArgs(turn));
    await processor.processOutputResult(outputArgs(turn));
    expect(alice.conversations).toHaveLength(1);
  });

  it("writes a different turn, and the same turn in another thread", async () => {
    const { processor, alice } = setup();
    await processor.processOutputResult(outputArgs(turn));
    await processor.processOutputResult(outputArgs({ ...turn, reply: "Tuesdays it is." }));
    await processor.processOutputResult(outputArgs({ ...turn, threadId: "thread-9" }));
    expect(alice.conversations.map((call) => [call.options.sessionId, call.messages[1]!.content])).toEqual([
      ["thread-1", "Noted: Tuesdays only."],
      ["thread-1", "Tuesdays it is."],
      ["thread-9", "Noted: Tuesdays only."],
    ]);
  });

  it("writes a retry of a turn whose write failed", async () => {
    const { processor, alice, log } = setup();
    alice.onConversation = failing("503 from server");
    await processor.processOutputResult(outputArgs(turn));
    alice.onConversation = async () => ({ results: [], noFactsExtracted: true });
    await processor.processOutputResult(outputArgs(turn));
    await processor.processOutputResult(outputArgs(turn)); // now landed: skipped
    expect(alice.conversations).toHaveLength(2);
    expect(log.entries).toHaveLength(1);
  });

  it("lets concurrent identical turns share one write", async () => {
    const { processor, alice } = setup();
    const gate = deferred<void>();
    alice.onConversation = async () => {
      await gate.promise;
      return { results: [], noFactsExtracted: true };
    };
    const first = processor.processOutputResult(outputArgs(turn));
    const second = processor.processOutputResult(outputArgs(turn));
    await sleep(10);
    let secondDone = false;
    void second.then(() => (secondDone = true));
    await sleep(10);
    expect(secondDone).toBe(false); // it waits on the shared write
    gate.resolve();
    await Promise.all([first, second]);
    expect(alice.conversations).toHaveLength(1);
  });

  it("reports a shared write's failure once and leaves the turn retryable", async () => {
    const { processor, alice, log } = setup();
    const gate = deferred<void>();
    alice.onConversation = async () => {
      await gate.promise;
      throw new Error("connection reset");
    };
    const both = Promise.all([processor.processOutputResult(outputArgs(turn)), processor.processOutputResult(outputArgs(turn))]);
    gate.resolve();
    await both;
    expect(alice.conversations).toHaveLength(1);
    expect(log.entries).toHaveLength(1);
    alice.onConversation = async () => ({ results: [], noFactsExtracted: true });
    await processor.processOutputResult(outputArgs(turn));
    expect(alice.conversations).toHaveLength(2);
  });
});
