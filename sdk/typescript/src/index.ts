export { CortadelClient, DEFAULT_BASE_URL, DEFAULT_TIMEOUT_MS } from "./client.js";
export type { AddMediaOptions, Community, MediaFact, MediaResult } from "./curation.js";
export {
  CortadelAbortError,
  CortadelConnectionError,
  CortadelError,
  CortadelTimeoutError,
  type CortadelErrorInit,
} from "./errors.js";
export type {
  AddBatchInput,
  AddBatchResult,
  AddConversationOptions,
  AddConversationResult,
  AddOptions,
  AddResult,
  BatchConversation,
  BatchMemory,
  ConversationFact,
  ConversationMessage,
  CortadelClientOptions,
  DatabaseCheck,
  DeleteResult,
  EmbeddingsCheck,
  HealthResponse,
  IndexesCheck,
  ListOptions,
  Memory,
  MemoryEvent,
  MemoryHistory,
  MemoryListItem,
  MemoryPage,
  MemoryType,
  SearchMode,
  SearchOptions,
  SearchResponse,
  SearchResult,
  TimePoint,
} from "./types.js";
export type {
  MergeSuggestion,
  MergeSuggestionPage,
  MergeSuggestionQuery,
  ReconcileOptions,
  ReconcileRun,
  ReconcileStatus,
} from "./reconcile.js";
export { DEFAULT_PAGE_SIZE } from "./wire.js";
