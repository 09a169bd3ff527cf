export { DEFAULT_MEMORY_HEADER } from "./recall.js";
export { UnresolvedUserError } from "./errors.js";
export type { MemoryErrorContext, MemoryErrorHandler, MemoryOperation } from "./errors.js";
export { cortadelMemory, type CortadelMemory } from "./memory.js";
export type {
  ConnectionOptions,
  CortadelMemoryOptions,
  CortadelMemoryProcessorOptions,
  CortadelToolsOptions,
  PersistOptions,
  RecallOptions,
} from "./options.js";
export { CortadelClientPool, MAX_CACHED_CLIENTS } from "./pool.js";
export type { CortadelClientLike, CortadelClientPoolOptions } from "./pool.js";
export { CortadelMemoryProcessor } from "./processor.js";
export type { IdentityOptions, MemoryScope } from "./scope.js";
export { createCortadelTools } from "./tools.js";
export type {
  AddMemoriesInput,
  AddMemoriesOutput,
  CortadelTools,
  SearchMemoryInput,
  SearchMemoryOutput,
} from "./tools.js";
