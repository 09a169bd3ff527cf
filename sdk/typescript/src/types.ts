/** Public request options and results. All names are camelCase; the client maps them to the wire. */

/**
 * What the server did with a write. The known values are listed; any other string the server
 * may add later is still accepted.
 */
export type MemoryEvent =
  | "ADD"
  | "SKIP_DUPLICATE"
  | "SUPERSEDE"
  | "INVALIDATE"
  | "TOUCH"
  | "RESOLVE"
  | "DELETE_ENTITY"
  | "ERROR"
  | (string & {});

/** Cognitive type of a memory. Other strings are passed through; the server ignores unknown ones. */
export type MemoryType = "episodic" | "semantic" | "procedural" | (string & {});

export type SearchMode = "hybrid" | "text" | "vector";

/** A point in time: a `Date`, or an ISO 8601 string sent as given. */
export type TimePoint = Date | string;

export interface CortadelClientOptions {
  /** Server URL. Default: `process.env.CORTADEL_BASE_URL`, then `http://localhost:3001`. */
  baseUrl?: string;
  /** The Cortadel user every call acts for. Required; no method takes a user id. */
  userId: string;
  /** Bearer key (from `cortadel mint-key <userId>`). Default: `process.env.CORTADEL_API_KEY`. */
  apiKey?: string;
  /** Per-request timeout in milliseconds. Default `100000`; `0` disables it. */
  timeoutMs?: number;
  /** The `fetch` to use. Default: the global `fetch`. */
  fetch?: typeof fetch;
}

export interface AddOptions {
  /** Application label stored with the memory (echoed back as `appName`). */
  app?: string;
  /** Caller-chosen cognitive type; unknown values fall back to auto-classification. */
  memoryType?: MemoryType;
  /** Arbitrary key-value pairs stored with the memory. */
  metadata?: Record<string, unknown>;
  /** `false` stores the text verbatim (intent detection and dedup still run). Server default `true`. */
  infer?: boolean;
  /** Project the memory belongs to (Cortadel server extension). */
  project?: string;
  /** Tags for scoped retrieval (Cortadel server extension). */
  tags?: string[];
}

export interface AddResult {
  /** Id of the stored memory (the existing one for `SKIP_DUPLICATE`); `""` for `ERROR`. */
  id: string;
  content: string;
  event: MemoryEvent;
  state: string | null;
  /** ISO 8601 creation time. */
  createdAt: string | null;
  appName: string | null;
  /** The metadata stored with the memory, decoded from the server's JSON string. */
  metadata: Record<string, unknown> | null;  /** Failure detail when `event` is `ERROR`. */
  error: string | null;
}

export interface ConversationMessage {
  role: "user" | "assistant" | "system" | (string & {});
  content: string;
  /** Producer-side turn id; facts extracted from this turn record it. */
  uuid?: string;
}

export interface AddConversationOptions {
  /** Group the extracted facts under this session (e.g. a chat thread id). */
  sessionId?: string;
  /** Project scope stamped on every fact (e.g. a repository name). */
  project?: string;
  /** Tags applied to every fact. */
  tags?: string[];
  /** Extract facts about the assistant instead of the user. Server default `false`. */
  isAgentMemory?: boolean;
  /** Producer-local transcript path stored on every fact. */
  transcriptPath?: string;
}

export interface ConversationFact {
  /** Id of the stored memory; `""` when the event carries none (e.g. `ERROR`). */
  id: string;
  /** The distilled fact. */
  memory: string;
  event: MemoryEvent;
  /** Failure detail when `event` is `ERROR`. */
  error: string | null;
}

export interface AddConversationResult {
  /** One entry per distilled fact; empty when nothing was extracted. */
  results: ConversationFact[];
  /** `true` when the conversation held nothing worth storing. */
  noFactsExtracted: boolean;
}

/** One memory of `addBatch`: a text and how to store it, as `add` takes them. */
export interface BatchMemory extends AddOptions {
  text: string;
}

/** One conversation of `addBatch`, as `addConversation` takes it. */
export interface BatchConversation extends AddConversationOptions {
  messages: readonly ConversationMessage[];
}

export interface AddBatchInput {
  /** Memories to store; a string is a text with the default options. */
  memories?: readonly (string | BatchMemory)[];
  conversations?: readonly BatchConversation[];
}

export interface AddBatchResult {
  /** One per memory sent, in order, as `add` answers it; an invalid one is an `ERROR` result. */
  memories: AddResult[];
  /** One per conversation sent, in order, as `addConversation` answers it. */
  conversations: AddConversationResult[];
}

export interface SearchOptions {
  /** Number of results, 1–50. Server default `10`. */
  topK?: number;
  /** Retrieval mode. Server default `"hybrid"`. */
  mode?: SearchMode;
  /** `"cross_encoder"` reranks the candidates with the server's cross-encoder. */
  rerank?: "cross_encoder";
  /** Only memories of this cognitive type. */
  memoryType?: MemoryType;
  /** Only facts stored under this session. */
  sessionId?: string;
  /** Label of the searching application (for access logging). */
  appName?: string;
  /** Trim the ranked list to about this many tokens (0 = unbounded). */
  tokenBudget?: number;
  /** Also return faded (stale) memories the server normally hides. */
  includeFaded?: boolean;
  /** Also search session summaries and expand them to their members. */
  includeSessionArm?: boolean;
  /** Expand the query with synonyms before the text search. */
  expandQuery?: boolean;
  /** Only facts of this project (Cortadel server extension). */
  project?: string;
  /** Only facts carrying this tag (Cortadel server extension). */
  tag?: string;
  /** Facts that were valid at this time (valid-time point in time; server extension). */
  asOf?: TimePoint;
  /** The store as it was known at this time (record-time point in time; server extension). */
  knownAt?: TimePoint;
}

export interface SearchResult {
  id: string;
  content: string;
  /** Fused rank score (> 0); higher is better. */
  rrfScore: number;
  /** ISO 8601 creation time. */
  createdAt: string | null;
  /** The app that wrote the memory. */
  appName: string | null;
  categories: string[];
  memoryType: MemoryType | null;
  tags: string[];
  source: string | null;
  /** `true` for a globally shared memory owned by another user. */
  global: boolean;
  /** Short headline of the memory, when the server made one. */
  gist: string | null;
  projectId: string | null;
  memberIds: string[];
  similarIds: string[];
  textRank: number | null;
  vectorRank: number | null;
  attributes: Record<string, unknown>;
}

export interface SearchResponse {
  query: string;
  total: number;
  results: SearchResult[];
}

export interface ListOptions {
  /** 1-based page number. Default `1`. */
  page?: number;
  /** Items per page, 1–100. Default `20`. */
  size?: number;
  /** Only memories written by this app. */
  appId?: string;
  /** Only memories in any of these categories. */
  categories?: string[];
  /** Only memories matching this text query. */
  searchQuery?: string;
  /** Include superseded versions, not only current facts. */
  includeSuperseded?: boolean;
  /** Facts that were valid at this time (valid-time point in time). */
  asOf?: TimePoint;
  /** The store as it was known at this time (record-time point in time; server extension). */
  knownAt?: TimePoint;
  /** Only memories of this cognitive type. */
  memoryType?: MemoryType;
}

export interface MemoryListItem {
  id: string;
  content: string;
  /** ISO 8601 creation time (the wire sends Unix seconds; the client converts). */
  createdAt: string;
  state: string | null;
  appId: string | null;
  appName: string | null;
  categories: string[];
  memoryType: MemoryType | null;
  /** Background extraction status: `done`, `pending` or `failed`. */
  extractionStatus: string | null;
  validAt: string | null;
  invalidAt: string | null;
  isCurrent: boolean;
  isGlobal: boolean;
  metadata: Record<string, unknown>;
  supersededBy: string | null;
  /** Extension fields: sent by the Cortadel server in this repository, `null`/`[]` elsewhere. */
  gist: string | null;
  tags: string[];
  project: string | null;
  sessionId: string | null;
  /** Ids of the conversation turns the fact was extracted from. */
  sourceTurnUuids: string[];
  /** When the store stopped holding this version (record time). */
  expiredAt: string | null;
}

export interface MemoryPage {
  items: MemoryListItem[];
  total: number;
  page: number;
  size: number;
  pages: number;
}

export interface Memory {
  id: string;
  /** The exact stored text. */
  text: string;
  /** ISO 8601 creation time (the wire sends Unix seconds; the client converts). */
  createdAt: string;
  state: string | null;
  appId: string | null;
  appName: string | null;
  categories: string[];
  metadata: Record<string, unknown>;
  validAt: string | null;
  invalidAt: string | null;
  isCurrent: boolean;
  /** Id of the newer memory that replaced this one. */
  supersededBy: string | null;
  isGlobal: boolean;
  memoryType: MemoryType | null;
  extractionStatus: string | null;
  transcriptPath: string | null;
  /** Extension fields: sent by the Cortadel server in this repository, `null`/`[]` elsewhere. */
  gist: string | null;
  tags: string[];
  project: string | null;
  sessionId: string | null;
  /** Ids of the conversation turns the fact was extracted from. */
  sourceTurnUuids: string[];
  /** When the store stopped holding this version (record time). */
  expiredAt: string | null;
}

export interface DeleteResult {
  /** Server confirmation, e.g. `"Deleted 2 memories"`. */
  message: string;
}

/**
 * Version history of one memory. Each event has at least `event` and `at`; the remaining keys are
 * passed through as the server sends them.
 */
export interface MemoryHistory {
  id: string;
  events: Array<Record<string, unknown>>;
}

export interface DatabaseCheck {
  ok: boolean;
  url: string | null;
  user: string | null;
  latencyMs: number | null;
  error: string | null;
}

export interface EmbeddingsCheck {
  ok: boolean;
  provider: string | null;
  model: string | null;
  dim: number | null;
  latencyMs: number | null;
  error: string | null;
}

export interface IndexesCheck {
  ok: boolean;
  model: string | null;
  providerDim: number | null;
  vectorIndexes: string[];
  mismatches: string[];
  error: string | null;
}

export interface HealthResponse {
  /** `"ok"` when every check passed, `"degraded"` otherwise (the server then answers 503). */
  status: "ok" | "degraded" | (string & {});
  /** ISO 8601 time of the check. */
  checkedAt: string | null;
  checks: {
    /** The database check; named `memgraph` whatever the storage backend is. */
    memgraph: DatabaseCheck;
    embeddings: EmbeddingsCheck;
    indexes: IndexesCheck;
  };
}
