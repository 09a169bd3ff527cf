import * as curation from "./curation.js";
import type { AddMediaOptions, Community, MediaResult } from "./curation.js";
import { exchange, type Connection, type Exchange } from "./http.js";
import * as reconcile from "./reconcile.js";
import type {
  MergeSuggestion,
  MergeSuggestionPage,
  MergeSuggestionQuery,
  ReconcileOptions,
  ReconcileRun,
  ReconcileStatus,
} from "./reconcile.js";
import type {
  AddBatchInput,
  AddBatchResult,
  AddConversationOptions,
  AddConversationResult,
  AddOptions,
  AddResult,
  ConversationMessage,
  CortadelClientOptions,
  DeleteResult,
  HealthResponse,
  ListOptions,
  Memory,
  MemoryHistory,
  MemoryPage,
  SearchOptions,
  SearchResponse,
} from "./types.js";
import * as wire from "./wire.js";

export const DEFAULT_BASE_URL = "http://localhost:3001";
export const DEFAULT_TIMEOUT_MS = 100_000;

const MEMORIES = "/api/v1/memories";

function environment(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.[name] || undefined;
}

/**
 * A client for one Cortadel user. Every method takes an optional `AbortSignal` last; it is combined
 * with the client's `timeoutMs`.
 *
 * ```ts
 * const memory = new CortadelClient({ userId: "alice" });
 * await memory.add("Alice prefers green tea");
 * const { results } = await memory.search("what does alice drink?");
 * ```
 */
export class CortadelClient {
  /** Server URL, without a trailing slash. */
  readonly baseUrl: string;
  /** The user every call acts for. */
  readonly userId: string;
  /** Per-request timeout in milliseconds; `0` means none. */
  readonly timeoutMs: number;
  readonly #connection: Connection;

  constructor(options: CortadelClientOptions) {
    if (typeof options?.userId !== "string" || options.userId === "") {
      throw new TypeError("CortadelClient needs a non-empty userId");
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
      throw new TypeError(`timeoutMs must be a non-negative number of milliseconds, got ${timeoutMs}`);
    }
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== "function") {
      throw new TypeError("No fetch available: use Node 18+ or pass options.fetch");
    }
    this.baseUrl = (options.baseUrl ?? environment("CORTADEL_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.userId = options.userId;
    this.timeoutMs = timeoutMs;
    this.#connection = {
      baseUrl: this.baseUrl,
      apiKey: options.apiKey ?? environment("CORTADEL_API_KEY"),
      timeoutMs,
      fetch: fetchImpl,
    };
  }

  /** Store one memory. */
  add(text: string, options: AddOptions = {}, signal?: AbortSignal): Promise<AddResult> {
    return this.#send({
      method: "POST",
      path: MEMORIES,
      body: wire.addBody(this.userId, text, options),
      signal,
      decode: wire.addResult,
    });
  }

  /** Distill a conversation (1–500 turns) into facts and store each one. */
  addConversation(
    messages: readonly ConversationMessage[],
    options: AddConversationOptions = {},
    signal?: AbortSignal,
  ): Promise<AddConversationResult> {
    return this.#send({
      method: "POST",
      path: `${MEMORIES}/from-conversation`,
      body: wire.addConversationBody(this.userId, messages, options),
      signal,
      decode: wire.addConversationResult,
    });
  }

  /**
   * Store many memories and conversations in one request and one transaction, in order (a later
   * item is deduplicated against an earlier one). One result per item, in the order sent; an
   * invalid item is an `ERROR` result and the others are stored all the same (Cortadel server
   * extension).
   */
  addBatch(input: AddBatchInput, signal?: AbortSignal): Promise<AddBatchResult> {
    return this.#send({
      method: "POST",
      path: `${MEMORIES}/batch`,
      body: wire.addBatchBody(this.userId, input),
      signal,
      decode: wire.addBatchResult,
    });
  }

  /** Ranked hybrid (text + vector) search over this user's memories. */
  search(query: string, options: SearchOptions = {}, signal?: AbortSignal): Promise<SearchResponse> {
    return this.#send({
      method: "POST",
      path: `${MEMORIES}/search`,
      body: wire.searchBody(this.userId, query, options),
      signal,
      decode: wire.searchResponse,
    });
  }

  /** One page of this user's memories, newest first. */
  list(options: ListOptions = {}, signal?: AbortSignal): Promise<MemoryPage> {
    return this.#send({
      method: "GET",
      path: MEMORIES,
      query: wire.listQuery(this.userId, options),
      signal,
      decode: wire.memoryPage,
    });
  }

  /** One memory, or `null` when this user has no memory with that id. */
  get(id: string, signal?: AbortSignal): Promise<Memory | null> {
    return this.#send({
      method: "GET",
      path: `${MEMORIES}/${encodeURIComponent(id)}`,
      query: new URLSearchParams({ user_id: this.userId }),
      signal,
      alsoAccept: [404],
      decode: (body, status) => (status === 404 ? null : wire.memory(body)),
    });
  }

  /** Version history of one memory, or `null` when this user has no memory with that id. */
  history(id: string, signal?: AbortSignal): Promise<MemoryHistory | null> {
    return this.#send({
      method: "GET",
      path: `${MEMORIES}/${encodeURIComponent(id)}/history`,
      query: new URLSearchParams({ user_id: this.userId }),
      signal,
      alsoAccept: [404],
      decode: (body, status) => (status === 404 ? null : wire.memoryHistory(body)),
    });
  }

  /** Delete memories by id. Unknown ids are not an error. */
  delete(ids: string | readonly string[], signal?: AbortSignal): Promise<DeleteResult> {
    return this.#send({
      method: "DELETE",
      path: MEMORIES,
      body: wire.deleteBody(this.userId, typeof ids === "string" ? [ids] : ids),
      signal,
      decode: (body) => ({ message: wire.deleteMessage(body) }),
    });
  }

  /**
   * Remember a document (`text`: plain, Markdown or HTML; `data`: the file's bytes, e.g. a PDF) as
   * facts that keep their page and offset, or an image (`data`) by its `caption` (or one the
   * server's vision model writes). The type comes from `mediaType`, else from `name` (Cortadel
   * server extension).
   */
  addMedia(name: string, options: AddMediaOptions, signal?: AbortSignal): Promise<MediaResult> {
    return this.#send({
      method: "POST",
      path: "/api/v1/media",
      body: curation.addMediaBody(this.userId, name, options),
      signal,
      decode: curation.mediaResult,
    });
  }

  /** This user's communities of entities and facts, level 0 then 1, largest first (Cortadel server extension). */
  communities(level?: number, signal?: AbortSignal): Promise<Community[]> {
    return this.#send({
      method: "GET",
      path: "/api/v1/communities",
      query: curation.communitiesQuery(this.userId, level),
      signal,
      decode: curation.communities,
    });
  }

  /**
   * Start a reconciliation run in the background (or get the one already queued or running): it
   * finds duplicate entities and stale facts, applies what it is sure of (reversibly) and leaves the
   * rest as suggestions (Cortadel server extension).
   */
  reconcile(options: ReconcileOptions = {}, signal?: AbortSignal): Promise<ReconcileRun> {
    return this.#send({
      method: "POST",
      path: `${reconcile.RECONCILE}/runs`,
      body: reconcile.startBody(this.userId, options),
      signal,
      decode: reconcile.reconcileRun,
    });
  }

  /** The latest reconciliation run, or the one named; `idle` when there is none (Cortadel server extension). */
  reconcileStatus(runId?: string, signal?: AbortSignal): Promise<ReconcileStatus> {
    return this.#send({
      method: "GET",
      path: `${reconcile.RECONCILE}/status`,
      query: reconcile.statusQuery(this.userId, runId),
      signal,
      decode: reconcile.reconcileStatus,
    });
  }

  /**
   * Cancel a queued or running reconciliation run; what it already applied stays (undo it suggestion
   * by suggestion). A finished run answers 409 (Cortadel server extension).
   */
  cancelReconcileRun(runId: string, signal?: AbortSignal): Promise<ReconcileRun> {
    return this.#send({
      method: "POST",
      path: `${reconcile.RECONCILE}/runs/${encodeURIComponent(runId)}/cancel`,
      body: { user_id: this.userId },
      signal,
      decode: reconcile.reconcileRun,
    });
  }

  /** Reconciliation suggestions, newest first (Cortadel server extension). */
  listMergeSuggestions(options: MergeSuggestionQuery = {}, signal?: AbortSignal): Promise<MergeSuggestionPage> {
    return this.#send({
      method: "GET",
      path: `${reconcile.RECONCILE}/suggestions`,
      query: reconcile.suggestionsQuery(this.userId, options),
      signal,
      decode: reconcile.mergeSuggestionPage,
    });
  }

  /** Apply a pending suggestion, reversibly (Cortadel server extension). */
  approveSuggestion(id: string, signal?: AbortSignal): Promise<MergeSuggestion> {
    return this.#decide(id, "approve", signal);
  }

  /** Reject a pending suggestion; no later run suggests it again (Cortadel server extension). */
  rejectSuggestion(id: string, signal?: AbortSignal): Promise<MergeSuggestion> {
    return this.#decide(id, "reject", signal);
  }

  /** Undo an applied suggestion: memories and entities are as before it (Cortadel server extension). */
  undoSuggestion(id: string, signal?: AbortSignal): Promise<MergeSuggestion> {
    return this.#decide(id, "undo", signal);
  }

  /**
   * Merge entity `source` into `target` (canonical names): recorded as a suggestion approved by
   * hand, undone like any other (Cortadel server extension).
   */
  mergeEntities(source: string, target: string, signal?: AbortSignal): Promise<MergeSuggestion> {
    return this.#send({
      method: "POST",
      path: `${reconcile.RECONCILE}/merges`,
      body: { user_id: this.userId, source, target },
      signal,
      decode: reconcile.mergeSuggestion,
    });
  }

  #decide(id: string, action: "approve" | "reject" | "undo", signal?: AbortSignal): Promise<MergeSuggestion> {
    return this.#send({
      method: "POST",
      path: `${reconcile.RECONCILE}/suggestions/${encodeURIComponent(id)}/${action}`,
      body: { user_id: this.userId },
      signal,
      decode: reconcile.mergeSuggestion,
    });
  }

  /** Server health. A degraded server (HTTP 503) is a result with `status: "degraded"`, not an error. */
  health(signal?: AbortSignal): Promise<HealthResponse> {
    return this.#send({
      method: "GET",
      path: "/api/health",
      signal,
      alsoAccept: [503],
      decode: wire.healthResponse,
    });
  }

  #send<T>(request: Exchange<T>): Promise<T> {
    return exchange(this.#connection, request);
  }
}
