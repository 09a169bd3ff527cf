import { MASTRA_RESOURCE_ID_KEY, MASTRA_THREAD_ID_KEY, RequestContext } from "@mastra/core/request-context";
import { describe, expect, it } from "vitest";
import { CortadelMemoryProcessor, UnresolvedUserError, type CortadelMemoryProcessorOptions, type MemoryScope } from "../src/index.js";
import { errorLog, fakeClients, inputArgs, outputArgs } from "./helpers.js";

const text = "Can we cut a release this Friday?";

function setup(options: CortadelMemoryProcessorOptions = {}) {
  const clients = fakeClients();
  const log = errorLog();
  const processor = new CortadelMemoryProcessor({ createClient: clients.createClient, onError: log.onError, ...options });
  return { processor, clients, log };
}

function contextWith(values: Record<string, string>): RequestContext {
  const context = new RequestContext();
  for (const [key, value] of Object.entries(values)) context.set(key as never, value);
  return context;
}

describe("who the memory belongs to", () => {
  it("uses the resource on the messages as the user and the thread as the session", async () => {
    const { processor, clients } = setup({ scopeRecallToSession: true });
    await processor.processInput(inputArgs({ user: text, resourceId: "alice", threadId: "thread-2" }));
    expect(clients.created).toEqual(["alice"]);
    expect(clients.of("alice").searches[0]!.options.sessionId).toBe("thread-2");
  });

  it("prefers Mastra's RequestContext keys over the ids on the messages", async () => {
    const { processor, clients } = setup({ scopeRecallToSession: true });
    const requestContext = contextWith({ [MASTRA_RESOURCE_ID_KEY]: "bob", [MASTRA_THREAD_ID_KEY]: "bob-thread" });
    await processor.processInput(inputArgs({ user: text, resourceId: "alice", threadId: "thread-2", requestContext }));
    expect(clients.created).toEqual(["bob"]);
    expect(clients.of("bob").searches[0]!.options.sessionId).toBe("bob-thread");
  });

  it("ranks resolveUserId over the pinned userId over the resource", async () => {
    const seen: MemoryScope[] = [];
    const requestContext = contextWith({ tenant: "acme" });
    const resolving = setup({
      userId: "pinned",
      resolveUserId: (scope) => {
        seen.push(scope);
        return `${String(scope.requestContext?.get("tenant" as never))}:${scope.resourceId}`;
      },
    });
    await resolving.processor.processInput(inputArgs({ user: text, resourceId: "alice", threadId: "t", requestContext }));
    expect(resolving.clients.created).toEqual(["acme:alice"]);
    expect(seen).toEqual([{ resourceId: "alice", threadId: "t", requestContext }]);

    const pinned = setup({ userId: "pinned" });
    await pinned.processor.processInput(inputArgs({ user: text, resourceId: "alice", threadId: "t" }));
    expect(pinned.clients.created).toEqual(["pinned"]);
  });

  it("falls through when resolveUserId returns undefined or null", async () => {
    for (const answer of [undefined, null]) {
      const { processor, clients } = setup({ userId: "pinned", resolveUserId: () => answer });
      await processor.processInput(inputArgs({ user: text, resourceId: "alice", threadId: "t" }));
      expect(clients.created).toEqual(["pinned"]);
    }
    const { processor, clients } = setup({ resolveUserId: () => undefined });
    await processor.processInput(inputArgs({ user: text, resourceId: "alice", threadId: "t" }));
    expect(clients.created).toEqual(["alice"]);
  });

  it("does not guess: with no id at all it reports resolve-user-id once per run and stays out", async () => {
    const { processor, clients, log } = setup();
    const state = {};
    const input = inputArgs({ user: text, state });
    expect(await processor.processInput(input)).toBe(input.messages);
    const output = outputArgs({ user: text, reply: "Fridays are fine.", state });
    expect(await processor.processOutputResult(output)).toBe(output.messages);

    expect(clients.created).toEqual([]);
    expect(log.entries).toHaveLength(1);
    expect(log.entries[0]!.error).toBeInstanceOf(UnresolvedUserError);
    expect((log.entries[0]!.error as UnresolvedUserError).code).toBe("unresolved_user");
    expect(log.entries[0]!.context).toEqual({ operation: "resolve-user-id", threadId: undefined });
  });

  it("reports a throwing resolveUserId as resolve-user-id, and rethrows it with throwOnError", async () => {
    const broken = new Error("session store offline");
    const { processor, log } = setup({ resolveUserId: () => { throw broken; } });
    const args = inputArgs({ user: text, resourceId: "alice", threadId: "t" });
    expect(await processor.processInput(args)).toBe(args.messages);
    expect(log.entries).toEqual([{ error: broken, context: { operation: "resolve-user-id", threadId: "t" } }]);

    const strict = setup({ throwOnError: true });
    await expect(strict.processor.processInput(inputArgs({ user: text }))).rejects.toBeInstanceOf(UnresolvedUserError);
  });
});
