import type {
  AddConversationOptions,
  AddConversationResult,
  AddOptions,
  AddResult,
  ConversationMessage,
  SearchOptions,
  SearchResponse,
  SearchResult,
} from "@cortadel/sdk";
import { MessageList } from "@mastra/core/agent/message-list";
import type { ProcessInputArgs, ProcessOutputResultArgs } from "@mastra/core/processors";
import type { RequestContext } from "@mastra/core/request-context";
import type { CortadelClientLike, MemoryErrorContext } from "../src/index.js";

export interface SearchCall {
  query: string;
  options: SearchOptions;
  signal: AbortSignal | undefined;
}
export interface AddCall {
  text: string;
  options: AddOptions;
  signal: AbortSignal | undefined;
}
export interface ConversationCall {
  messages: ConversationMessage[];
  options: AddConversationOptions;
  signal: AbortSignal | undefined;
}

/** A Cortadel client double: records every call and answers with whatever the test scripts. */
export class FakeClient implements CortadelClientLike {
  readonly searches: SearchCall[] = [];
  readonly adds: AddCall[] = [];
  readonly conversations: ConversationCall[] = [];
  onSearch: (call: SearchCall) => Promise<SearchResult[]> = async () => [];
  onAdd: (call: AddCall) => Promise<AddResult> = async (call) => added(call.text);
  onConversation: (call: ConversationCall) => Promise<AddConversationResult> = async () => ({
    results: [],
    noFactsExtracted: true,
  });

  constructor(readonly userId = "alice") {}

  async search(query: string, options: SearchOptions = {}, signal?: AbortSignal): Promise<SearchResponse> {
    const call = { query, options, signal };
    this.searches.push(call);
    const results = await this.onSearch(call);
    return { query, total: results.length, results };
  }

  add(text: string, options: AddOptions = {}, signal?: AbortSignal): Promise<AddResult> {
    const call = { text, options, signal };
    this.adds.push(call);
    return this.onAdd(call);
  }

  addConversation(
    messages: readonly ConversationMessage[],
    options: AddConversationOptions = {},
    signal?: AbortSignal,
  ): Promise<AddConversationResult> {
    const call = { messages: [...messages], options, signal };
    this.conversations.push(call);
    return this.onConversation(call);
  }
}

/** One fake client per user id, plus the `createClient` that hands them out. */
export function fakeClients() {
  const clients = new Map<string, FakeClient>();
  const created: string[] = [];
  /** Counts each call; reuses a client the test already scripted through `of`. */
  const createClient = (userId: string): FakeClient => {
    created.push(userId);
    const client = clients.get(userId) ?? new FakeClient(userId);
    clients.set(userId, client);
    return client;
  };
  return {
    createClient,
    created,
    /** The client for `userId`, made on demand so a test can script it before the pool asks. */
    of(userId: string): FakeClient {
      const client = clients.get(userId) ?? new FakeClient(userId);
      clients.set(userId, client);
      return client;
    },
  };
}

export function memory(id: string, content: string, extra: Partial<SearchResult> = {}): SearchResult {
  return {
    id,
    content,
    rrfScore: 0.5,
    createdAt: "2026-11-02T09:30:00Z",
    appName: null,
    categories: [],
    memoryType: null,
    tags: [],
    source: null,
    global: false,
    gist: null,
    projectId: null,
    memberIds: [],
    similarIds: [],
    textRank: null,
    vectorRank: null,
    attributes: {},
    ...extra,
  };
}

export function added(text: string, event = "ADD", id = `id-${text.length}`, error: string | null = null): AddResult {
  return { id, content: text, event, state: "active", createdAt: "2026-11-30T10:00:00Z", appName: null, metadata: null, error };
}

/** A promise the test settles by hand. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** An `onError` that records what it is given. */
export function errorLog() {
  const entries: Array<{ error: unknown; context: MemoryErrorContext }> = [];
  return { entries, onError: (error: unknown, context: MemoryErrorContext) => entries.push({ error, context }) };
}

function abort(reason?: string): never {
  throw new Error(`processor aborted: ${reason}`);
}

export interface TurnSpec {
  user: string;
  resourceId?: string;
  threadId?: string;
  requestContext?: RequestContext;
  systemMessages?: Array<{ role: "system"; content: string }>;
  state?: Record<string, unknown>;
  abortSignal?: AbortSignal;
}

function listFor(spec: TurnSpec): MessageList {
  const list = new MessageList({ threadId: spec.threadId, resourceId: spec.resourceId });
  list.add({ role: "user", content: spec.user }, "input");
  return list;
}

/** `processInput` arguments for a turn where the user says `spec.user`. */
export function inputArgs(spec: TurnSpec): ProcessInputArgs {
  const messageList = listFor(spec);
  return {
    messages: messageList.get.all.db(),
    messageList,
    systemMessages: spec.systemMessages ?? [{ role: "system", content: "You are a release assistant." }],
    state: spec.state ?? {},
    requestContext: spec.requestContext,
    abortSignal: spec.abortSignal,
    abort,
    retryCount: 0,
  };
}

/** `processOutputResult` arguments for a turn where the user said `spec.user` and the model `reply`. */
export function outputArgs(spec: TurnSpec & { reply: string }): ProcessOutputResultArgs {
  const messageList = listFor(spec);
  messageList.add({ role: "assistant", content: spec.reply }, "response");
  return {
    messages: messageList.get.response.db(),
    messageList,
    state: spec.state ?? {},
    requestContext: spec.requestContext,
    abort,
    retryCount: 0,
    result: {
      text: spec.reply,
      finishReason: "stop",
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      steps: [],
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
