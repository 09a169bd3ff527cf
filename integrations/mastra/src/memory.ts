import type { CortadelMemoryOptions } from "./options.js";
import { CortadelClientPool } from "./pool.js";
import { CortadelMemoryProcessor } from "./processor.js";
import { createCortadelTools, type CortadelTools } from "./tools.js";

/** Both halves of Cortadel memory for one agent, sharing one client pool. */
export interface CortadelMemory {
  /** Register in both `inputProcessors` and `outputProcessors`. */
  processor: CortadelMemoryProcessor;
  /** Spread into the agent's `tools`; re-key an entry to rename what the model sees. */
  tools: CortadelTools;
  /** The per-user clients both halves use. */
  pool: CortadelClientPool;
}

/**
 * Automatic recall and persistence (the processor) plus model-callable memory tools, over one
 * shared pool of Cortadel clients. `topK`, `searchMode`, `rerank`, `scopeRecallToSession` and
 * `timeoutMs` are single fields feeding both halves; unset, each half keeps its own default.
 *
 * ```ts
 * const memory = cortadelMemory({ baseUrl: "http://localhost:3001" });
 * new Agent({ ..., tools: { ...memory.tools }, inputProcessors: [memory.processor], outputProcessors: [memory.processor] });
 * ```
 */
export function cortadelMemory(options: CortadelMemoryOptions = {}): CortadelMemory {
  const pool = options.pool ?? new CortadelClientPool(options);
  const shared = { ...options, pool };
  return { processor: new CortadelMemoryProcessor(shared), tools: createCortadelTools(shared), pool };
}
