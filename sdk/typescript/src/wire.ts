/**
 * The snake_case wire: request bodies and query strings out, camelCase results in.
 * Unset options are omitted (never sent as `null`); nullable response fields become `null`,
 * nullable lists become `[]`.
 */
import type {
  AddBatchInput,
  AddBatchResult,
  AddConversationOptions,
  AddConversationResult,
  AddOptions,
  AddResult,
  ConversationFact,
  ConversationMessage,
  DatabaseCheck,
  EmbeddingsCheck,
  HealthResponse,
  IndexesCheck,
  ListOptions,
  Memory,
  MemoryHistory,
  MemoryListItem,
  MemoryPage,
  SearchOptions,
  SearchResponse,
  SearchResult,
  TimePoint,
} from "./types.js";

export type Json = Record<string, unknown>;

/** A response body that does not have the shape the contract promises. */
export class WireShapeError extends Error {
  override name = "WireShapeError";
}

// ---- requests --------------------------------------------------------------------------------

export function definedOnly(fields: Json): Json {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

function timePoint(value: TimePoint | undefined): string | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

export function addBody(userId: string, text: string, options: AddOptions): Json {
  return definedOnly({ user_id: userId, ...memoryFields(text, options) });
}

export function addConversationBody(
  userId: string,
  messages: readonly ConversationMessage[],
  options: AddConversationOptions,
): Json {
  return definedOnly({ user_id: userId, ...conversationFields(messages, options) });
}

export function addBatchBody(userId: string, input: AddBatchInput): Json {
  return definedOnly({
    user_id: userId,
    memories: (input.memories ?? []).map((m) =>
      definedOnly(typeof m === "string" ? memoryFields(m, {}) : memoryFields(m.text, m)),
    ),
    conversations: (input.conversations ?? []).map((c) => definedOnly(conversationFields(c.messages, c))),
  });
}

/** What one add sends about its memory (a batch sends the same per memory). */
function memoryFields(text: string, options: AddOptions): Json {
  return {
    text,
    infer: options.infer,
    app: options.app,
    memory_type: options.memoryType,
    metadata: options.metadata,
    project: options.project,
    tags: options.tags,
  };
}

function conversationFields(messages: readonly ConversationMessage[], options: AddConversationOptions): Json {
  return {
    messages: messages.map((m) => definedOnly({ role: m.role, content: m.content, uuid: m.uuid })),
    is_agent_memory: options.isAgentMemory,
    tags: options.tags,
    project: options.project,
    session_id: options.sessionId,
    transcript_path: options.transcriptPath,
  };
}

export function searchBody(userId: string, query: string, options: SearchOptions): Json {
  return definedOnly({
    query,
    user_id: userId,
    top_k: options.topK,
    mode: options.mode,
    app_name: options.appName,
    session_id: options.sessionId,
    rerank: options.rerank,
    memory_type: options.memoryType,
    token_budget: options.tokenBudget,
    expand_query: options.expandQuery,
    include_faded: options.includeFaded,
    include_session_arm: options.includeSessionArm,
    project: options.project,
    tag: options.tag,
    as_of: timePoint(options.asOf),
    known_at: timePoint(options.knownAt),
  });
}

/** Default page size of `list()`. */
export const DEFAULT_PAGE_SIZE = 20;

export function listQuery(userId: string, options: ListOptions): URLSearchParams {
  const fields = definedOnly({
    user_id: userId,
    page: String(options.page ?? 1),
    size: String(options.size ?? DEFAULT_PAGE_SIZE),
    app_id: options.appId,
    categories: options.categories?.join(","),
    search_query: options.searchQuery,
    include_superseded: options.includeSuperseded ? "true" : undefined,
    as_of: timePoint(options.asOf),
    known_at: timePoint(options.knownAt),
    memory_type: options.memoryType,
  });
  return new URLSearchParams(fields as Record<string, string>);
}

export function deleteBody(userId: string, ids: readonly string[]): Json {
  return { user_id: userId, memory_ids: [...ids] };
}

// ---- responses -------------------------------------------------------------------------------

export function object(value: unknown, what: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new WireShapeError(`expected a JSON object for ${what}`);
  }
  return value as Json;
}

export function text(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

export function count(value: unknown): number | null {
  return typeof value === "number" ? value : null;
}

export function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

/** Unix seconds (list/get) or an ISO string (add/search) → ISO 8601 string. */
function isoTime(value: unknown): string | null {
  if (typeof value === "number") return new Date(value * 1000).toISOString();
  return text(value);
}

/** The add response carries metadata as a JSON-encoded string. */
function decodedMetadata(value: unknown): Record<string, unknown> | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "object") return record(value);
  if (typeof value !== "string") throw new WireShapeError("metadata is neither a string nor an object");
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new WireShapeError("metadata is not valid JSON");
  }
  return parsed === null ? null : object(parsed, "metadata");
}

export function addResult(body: unknown): AddResult {
  const b = object(body, "the add response");
  return {
    id: text(b.id) ?? "",
    content: text(b.content) ?? "",
    event: text(b.event) ?? "",
    state: text(b.state),
    createdAt: isoTime(b.created_at),
    appName: text(b.app_name),
    metadata: decodedMetadata(b.metadata),
    error: text(b.error),
  };
}

function conversationFact(item: unknown): ConversationFact {
  const f = object(item, "a conversation result");
  return {
    id: text(f.id) ?? "",
    memory: text(f.memory) ?? "",
    event: text(f.event) ?? "",
    error: text(f.error),
  };
}

export function addConversationResult(body: unknown): AddConversationResult {
  const b = object(body, "the add-conversation response");
  const results = Array.isArray(b.results) ? b.results.map(conversationFact) : [];
  return { results, noFactsExtracted: b.no_facts_extracted === true };
}

export function addBatchResult(body: unknown): AddBatchResult {
  const b = object(body, "the batch response");
  return {
    memories: Array.isArray(b.memories) ? b.memories.map(addResult) : [],
    conversations: Array.isArray(b.conversations) ? b.conversations.map(addConversationResult) : [],
  };
}

function searchResult(item: unknown): SearchResult {
  const r = object(item, "a search result");
  return {
    id: text(r.id) ?? "",
    content: text(r.content) ?? "",
    rrfScore: count(r.rrf_score) ?? 0,
    createdAt: isoTime(r.created_at),
    appName: text(r.app_name),
    categories: strings(r.categories),
    memoryType: text(r.memory_type),
    tags: strings(r.tags),
    source: text(r.source),
    global: r.global === true,
    gist: text(r.gist),
    projectId: text(r.project_id),
    memberIds: strings(r.member_ids),
    similarIds: strings(r.similar_ids),
    textRank: count(r.text_rank),
    vectorRank: count(r.vector_rank),
    attributes: record(r.attributes),
  };
}

export function searchResponse(body: unknown): SearchResponse {
  const b = object(body, "the search response");
  const results = Array.isArray(b.results) ? b.results.map(searchResult) : [];
  return { query: text(b.query) ?? "", total: count(b.total) ?? results.length, results };
}

/** Fields this repository's server adds to list items and memory details. */
function extensions(m: Json) {
  return {
    gist: text(m.gist),
    tags: strings(m.tags),
    project: text(m.project),
    sessionId: text(m.session_id),
    sourceTurnUuids: strings(m.source_turn_uuids),
    expiredAt: text(m.expired_at),
  };
}

function listItem(item: unknown): MemoryListItem {
  const m = object(item, "a memory list item");
  return {
    id: text(m.id) ?? "",
    content: text(m.content) ?? "",
    createdAt: isoTime(m.created_at) ?? "",
    state: text(m.state),
    appId: text(m.app_id),
    appName: text(m.app_name),
    categories: strings(m.categories),
    memoryType: text(m.memory_type),
    extractionStatus: text(m.extraction_status),
    validAt: text(m.valid_at),
    invalidAt: text(m.invalid_at),
    isCurrent: m.is_current !== false,
    isGlobal: m.is_global === true,
    metadata: record(m.metadata_),
    supersededBy: text(m.superseded_by),
    ...extensions(m),
  };
}

export function memoryPage(body: unknown): MemoryPage {
  const b = object(body, "the list response");
  const items = Array.isArray(b.items) ? b.items.map(listItem) : [];
  return {
    items,
    total: count(b.total) ?? items.length,
    page: count(b.page) ?? 1,
    size: count(b.size) ?? items.length,
    pages: count(b.pages) ?? 1,
  };
}

export function memory(body: unknown): Memory {
  const m = object(body, "the memory");
  return {
    id: text(m.id) ?? "",
    text: text(m.text) ?? "",
    createdAt: isoTime(m.created_at) ?? "",
    state: text(m.state),
    appId: text(m.app_id),
    appName: text(m.app_name),
    categories: strings(m.categories),
    metadata: record(m.metadata_),
    validAt: text(m.valid_at),
    invalidAt: text(m.invalid_at),
    isCurrent: m.is_current !== false,
    supersededBy: text(m.superseded_by),
    isGlobal: m.is_global === true,
    memoryType: text(m.memory_type),
    extractionStatus: text(m.extraction_status),
    transcriptPath: text(m.transcript_path),
    ...extensions(m),
  };
}

export function deleteMessage(body: unknown): string {
  return text(object(body, "the delete response").message) ?? "";
}

export function memoryHistory(body: unknown): MemoryHistory {
  const b = object(body, "the memory history");
  const events = Array.isArray(b.events) ? b.events.map((e) => object(e, "a history event")) : [];
  return { id: text(b.id) ?? "", events };
}

function databaseCheck(value: unknown): DatabaseCheck {
  const c = record(value);
  return {
    ok: c.ok === true,
    url: text(c.url),
    user: text(c.user),
    latencyMs: count(c.latency_ms),
    error: text(c.error),
  };
}

function embeddingsCheck(value: unknown): EmbeddingsCheck {
  const c = record(value);
  return {
    ok: c.ok === true,
    provider: text(c.provider),
    model: text(c.model),
    dim: count(c.dim),
    latencyMs: count(c.latency_ms),
    error: text(c.error),
  };
}

function indexesCheck(value: unknown): IndexesCheck {
  const c = record(value);
  return {
    ok: c.ok === true,
    model: text(c.model),
    providerDim: count(c.provider_dim),
    vectorIndexes: strings(c.vector_indexes),
    mismatches: strings(c.mismatches),
    error: text(c.error),
  };
}

export function healthResponse(body: unknown): HealthResponse {
  const b = object(body, "the health response");
  const checks = record(b.checks);
  return {
    status: text(b.status) ?? "",
    checkedAt: text(b.checked_at),
    checks: {
      memgraph: databaseCheck(checks.memgraph),
      embeddings: embeddingsCheck(checks.embeddings),
      indexes: indexesCheck(checks.indexes),
    },
  };
}
