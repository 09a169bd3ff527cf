import type { ConversationMessage, MemoryType, SearchMode, SearchResult } from "@cortadel/sdk";
import type { MastraDBMessage } from "@mastra/core/agent/message-list";
import type {
  ProcessInputArgs,
  ProcessInputResult,
  ProcessOutputResultArgs,
  Processor,
} from "@mastra/core/processors";
import { withDeadline } from "./deadline.js";
import { ErrorPolicy } from "./errors.js";
import { InjectedMemoryTracker, DEFAULT_MEMORY_HEADER, formatMemoryBlock } from "./recall.js";
import { TurnLatch } from "./latch.js";
import { assistantText, latestUserText } from "./messages.js";
import { checkInteger, DEFAULT_APP_NAME, PROCESSOR_DEFAULTS, type CortadelMemoryProcessorOptions } from "./options.js";
import { CortadelClientPool, type CortadelClientLike } from "./pool.js";
import { resolveScope, scopeOfRun, type IdentityOptions, type ResolvedScope } from "./scope.js";

const SCOPE_STATE_KEY = "cortadelScope";

interface RunArgs {
  requestContext?: ProcessInputArgs["requestContext"];
  messages: MastraDBMessage[];
  state: Record<string, unknown>;
}

/**
 * Automatic long-term memory for a Mastra agent: `processInput` recalls what Cortadel knows that is
 * relevant to the user's message and appends it as one system message; `processOutputResult`
 * sends the finished turn to Cortadel to be distilled into facts. Register the same instance as an
 * input and an output processor.
 *
 * ```ts
 * const memory = new CortadelMemoryProcessor({ baseUrl: "http://localhost:3001" });
 * new Agent({ ..., inputProcessors: [memory], outputProcessors: [memory] });
 * ```
 */
export class CortadelMemoryProcessor implements Processor<string> {
  readonly id: string;
  readonly name = "Cortadel memory";
  readonly description = "Recalls long-term memories from Cortadel before the model call and stores the finished turn after it.";
  /** The clients this processor talks through, one per Cortadel user id. */
  readonly pool: CortadelClientPool;

  readonly #identity: IdentityOptions;
  readonly #errors: ErrorPolicy;
  readonly #appName: string;
  readonly #recall: {
    enabled: boolean;
    topK: number;
    mode: SearchMode;
    rerank: boolean;
    memoryType: MemoryType | undefined;
    sessionOnly: boolean;
    minQueryLength: number;
    dedupe: boolean;
    header: string;
    timeoutMs: number;
  };
  readonly #persist: {
    enabled: boolean;
    await: boolean;
    timeoutMs: number;
    project: string | undefined;
    tags: string[] | undefined;
    isAgentMemory: boolean | undefined;
  };
  readonly #injected: InjectedMemoryTracker;
  readonly #latch: TurnLatch;

  constructor(options: CortadelMemoryProcessorOptions = {}) {
    const defaults = PROCESSOR_DEFAULTS;
    this.id = options.id ?? defaults.id;
    this.pool = options.pool ?? new CortadelClientPool(options);
    this.#identity = { userId: options.userId, resolveUserId: options.resolveUserId };
    this.#errors = new ErrorPolicy(options);
    this.#appName = options.appName ?? DEFAULT_APP_NAME;
    this.#recall = {
      enabled: options.recall ?? true,
      topK: checkInteger("topK", options.topK ?? defaults.topK, 1, 50),
      mode: options.searchMode ?? defaults.searchMode,
      rerank: options.rerank ?? false,
      memoryType: options.memoryType,
      sessionOnly: options.scopeRecallToSession ?? false,
      minQueryLength: checkInteger("minQueryLength", options.minQueryLength ?? defaults.minQueryLength, 0),
      dedupe: options.dedupeAcrossTurns ?? true,
      header: options.header ?? DEFAULT_MEMORY_HEADER,
      timeoutMs: checkInteger("recallTimeoutMs", options.recallTimeoutMs ?? defaults.recallTimeoutMs, 0),
    };
    this.#persist = {
      enabled: options.persist ?? true,
      await: options.awaitPersist ?? true,
      timeoutMs: checkInteger("persistTimeoutMs", options.persistTimeoutMs ?? defaults.persistTimeoutMs, 0),
      project: options.project,
      tags: options.tags,
      isAgentMemory: options.isAgentMemory,
    };
    const maxThreads = checkInteger("maxTrackedThreads", options.maxTrackedThreads ?? defaults.maxTrackedThreads, 1);
    const maxPerThread = checkInteger("maxTrackedPerThread", options.maxTrackedPerThread ?? defaults.maxTrackedPerThread, 1);
    this.#injected = new InjectedMemoryTracker(maxPerThread, maxThreads);
    this.#latch = new TurnLatch(maxThreads);
  }

  /** Search Cortadel with the user's message and append one system message holding the hits. */
  async processInput(args: ProcessInputArgs): Promise<ProcessInputResult> {
    if (!this.#recall.enabled) return args.messages;
    const scope = this.#scope(args);
    if (scope === undefined) return args.messages;
    const query = latestUserText(args.messageList, args.messages);
    if (query.length < this.#recall.minQueryLength) return args.messages;

    const recall = this.#recall;
    // Without a thread there is no conversation the model could have seen a memory in before.
    const thread = recall.dedupe && scope.threadId !== undefined ? threadKey(scope) : undefined;
    let memories: SearchResult[];
    try {
      const client = this.pool.get(scope.userId);
      const response = await withDeadline(recall.timeoutMs, args.abortSignal, (signal) =>
        client.search(
          query,
          {
            topK: recall.topK,
            mode: recall.mode,
            appName: this.#appName,
            ...(recall.rerank && { rerank: "cross_encoder" as const }),
            ...(recall.memoryType !== undefined && { memoryType: recall.memoryType }),
            ...(recall.sessionOnly && scope.threadId !== undefined && { sessionId: scope.threadId }),
          },
          signal,
        ),
      );
      memories = thread === undefined ? response.results : this.#injected.unseen(thread, response.results);
    } catch (error) {
      this.#errors.report(error, { operation: "recall", userId: scope.userId, threadId: scope.threadId });
      return args.messages;
    }
    if (memories.length === 0) return args.messages;
    if (thread !== undefined) this.#injected.remember(thread, memories.map((memory) => memory.id));
    return {
      messages: args.messages,
      systemMessages: [...args.systemMessages, { role: "system", content: formatMemoryBlock(recall.header, memories) }],
    };
  }

  /** Send the user message and the model's reply to Cortadel; the messages pass through unchanged. */
  async processOutputResult(args: ProcessOutputResultArgs): Promise<MastraDBMessage[]> {
    if (!this.#persist.enabled) return args.messages;
    const scope = this.#scope(args);
    if (scope === undefined) return args.messages;
    const turn = turnOf(args);
    if (turn.length === 0) return args.messages;

    const persist = this.#persist;
    const context = { operation: "persist" as const, userId: scope.userId, threadId: scope.threadId };
    let client: CortadelClientLike;
    try {
      client = this.pool.get(scope.userId);
    } catch (error) {
      this.#errors.report(error, context);
      return args.messages;
    }
    const write = this.#latch.claim(threadKey(scope), fingerprint(turn), async () => {
      await withDeadline(persist.timeoutMs, undefined, (signal) =>
        client.addConversation(
          turn,
          {
            ...(scope.threadId !== undefined && { sessionId: scope.threadId }),
            ...(persist.project !== undefined && { project: persist.project }),
            ...(persist.tags !== undefined && { tags: persist.tags }),
            ...(persist.isAgentMemory !== undefined && { isAgentMemory: persist.isAgentMemory }),
          },
          signal,
        ),
      );
    });
    if (write === undefined) return args.messages; // this exact turn already landed
    // Whoever started the write reports its failure; a caller that joined it stays quiet.
    const settled = write.done.catch((error: unknown) => {
      if (!write.joined) this.#errors.report(error, context, persist.await);
    });
    if (persist.await) await settled;
    return args.messages;
  }

  /** Resolve the run's Cortadel scope once per run; both hooks share it through `state`. */
  #scope(args: RunArgs): ResolvedScope | undefined {
    if (SCOPE_STATE_KEY in args.state) return args.state[SCOPE_STATE_KEY] as ResolvedScope | undefined;
    // Mark the run as resolved before trying, so a failure (even a rethrown one) is reported once.
    args.state[SCOPE_STATE_KEY] = undefined;
    const scope = resolveScope(scopeOfRun(args.requestContext, args.messages), this.#identity, this.#errors);
    args.state[SCOPE_STATE_KEY] = scope;
    return scope;
  }
}

function threadKey(scope: ResolvedScope): string {
  return `${scope.userId}\u0000${scope.threadId ?? ""}`;
}

/** The turn to store: the user's message and the model's reply, whichever are non-empty. */
function turnOf(args: ProcessOutputResultArgs): ConversationMessage[] {
  const user = latestUserText(args.messageList, args.messages);
  const reply = (typeof args.result?.text === "string" && args.result.text.trim()) || assistantText(args.messages);
  const turn: ConversationMessage[] = [];
  if (user !== "") turn.push({ role: "user", content: user });
  if (reply !== "") turn.push({ role: "assistant", content: reply });
  return turn;
}

/** What identifies a turn to the duplicate-turn latch: its exact messages. */
function fingerprint(turn: readonly ConversationMessage[]): string {
  return JSON.stringify(turn);
}
