import type { MemoryType, SearchMode } from "@cortadel/sdk";
import type { ErrorPolicyOptions } from "./errors.js";
import type { CortadelClientPool, CortadelClientPoolOptions } from "./pool.js";
import type { IdentityOptions } from "./scope.js";

/** Where the server is, who the user is, and what happens on failure. Shared by every entry point. */
export interface ConnectionOptions extends CortadelClientPoolOptions, IdentityOptions, ErrorPolicyOptions {
  /** Label recorded on searches and stamped on `add_memories` writes. Default `"cortadel-mastra"`. */
  appName?: string;
  /**
   * Use this pool instead of building one from `baseUrl` / `apiKey` / `timeoutMs` / `createClient`
   * (which are then ignored). `cortadelMemory()` uses it to share one pool between both halves.
   */
  pool?: CortadelClientPool;
}

/** What the processor recalls before the model call (`processInput`). */
export interface RecallOptions {
  /** Inject recalled memories at all. Default `true`. */
  recall?: boolean;
  /** Memories injected per turn, 1–50. Default `5`. */
  topK?: number;
  /** Cortadel search mode. Default `"hybrid"`. */
  searchMode?: SearchMode;
  /** Rerank with the server's cross-encoder. Default `false`. */
  rerank?: boolean;
  /** Only recall memories of this type (`episodic`, `semantic`, `procedural`). */
  memoryType?: MemoryType;
  /** Recall only from the current thread (ignored on a run without one). Default `false`. */
  scopeRecallToSession?: boolean;
  /** Skip the search when the user's message is shorter than this. Default `3`. */
  minQueryLength?: number;
  /** Never inject the same memory twice in one thread. Default `true`. */
  dedupeAcrossTurns?: boolean;
  /** Injected memory ids remembered per thread. Default `200`. */
  maxTrackedPerThread?: number;
  /** Threads tracked (for dedupe and the duplicate-turn latch) before the oldest is dropped. Default `256`. */
  maxTrackedThreads?: number;
  /** Heading above the injected bullets. Default `DEFAULT_MEMORY_HEADER`. */
  header?: string;
  /** Give up on recall after this many ms; `0` disables. Default `5000`. */
  recallTimeoutMs?: number;
}

/** How the processor writes the finished turn (`processOutputResult`). */
export interface PersistOptions {
  /** Write finished turns at all. Default `true`. */
  persist?: boolean;
  /** Wait for the write before the run returns; `false` = fire and forget. Default `true`. */
  awaitPersist?: boolean;
  /** Give up on the write after this many ms; `0` disables. Default `10000`. */
  persistTimeoutMs?: number;
  /** Cortadel project stamped on the stored facts. */
  project?: string;
  /** Tags applied to every stored fact. */
  tags?: string[];
  /** Extract facts about the assistant instead of the user. Default `false`. */
  isAgentMemory?: boolean;
}

export interface CortadelMemoryProcessorOptions extends ConnectionOptions, RecallOptions, PersistOptions {
  /** Processor id, unique within an agent. Default `"cortadel-memory"`. */
  id?: string;
}

export interface CortadelToolsOptions extends ConnectionOptions {
  /** Results when the model does not ask for a number, 1–50. Default `10`. */
  topK?: number;
  /** Cortadel search mode. Default `"hybrid"`. */
  searchMode?: SearchMode;
  /** Rerank with the server's cross-encoder. Default `false`. */
  rerank?: boolean;
  /** Restrict `search_memory` to the current thread. Default `false`. */
  scopeRecallToSession?: boolean;
  /**
   * Abort a tool call after this many ms; `0` disables. Default `10000`. When set, it is also the
   * SDK's per-request timeout for the pool this function builds.
   */
  timeoutMs?: number;
  /** Prefix for both tool ids (`"memory"` → `memory_search_memory`); the model-facing names stay the keys. */
  idPrefix?: string;
}

/** Everything `cortadelMemory()` takes: shared fields feed both the processor and the tools. */
export interface CortadelMemoryOptions extends CortadelMemoryProcessorOptions, CortadelToolsOptions {}

export const DEFAULT_APP_NAME = "cortadel-mastra";

export const PROCESSOR_DEFAULTS = {
  id: "cortadel-memory",
  topK: 5,
  searchMode: "hybrid",
  minQueryLength: 3,
  maxTrackedPerThread: 200,
  maxTrackedThreads: 256,
  recallTimeoutMs: 5_000,
  persistTimeoutMs: 10_000,
} as const;

export const TOOL_DEFAULTS = {
  topK: 10,
  searchMode: "hybrid",
  timeoutMs: 10_000,
} as const;

/** Throw a `RangeError` naming `name` unless `value` is an integer within `[min, max]`. */
export function checkInteger(name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `${min}–${max}`;
    throw new RangeError(`${name} must be an integer ${range}, got ${value}`);
  }
  return value;
}
