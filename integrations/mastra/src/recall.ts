import type { SearchResult } from "@cortadel/sdk";
import { LruMap } from "./lru.js";

/** Heading placed above the recalled memories in the injected system message. */
export const DEFAULT_MEMORY_HEADER =
  "Long-term memory: facts recalled about this user from earlier conversations. " +
  "Use them where they help; newer statements from the user take precedence.";

/** One bullet per memory under `header`: `- <gist or content> (recorded <createdAt>)`. */
export function formatMemoryBlock(header: string, memories: readonly SearchResult[]): string {
  const bullets = memories.map((memory) => {
    const text = memory.gist?.trim() || memory.content;
    return memory.createdAt ? `- ${text} (recorded ${memory.createdAt})` : `- ${text}`;
  });
  return [header, ...bullets].join("\n");
}

/**
 * Remembers which memory ids were already put in front of the model in each thread, so a later
 * turn does not re-state them. Bounded twice: `maxPerThread` ids per thread (oldest forgotten
 * first) and `maxThreads` threads (least recently active forgotten first).
 */
export class InjectedMemoryTracker {
  readonly #threads: LruMap<string, LruMap<string, true>>;
  readonly #maxPerThread: number;

  constructor(maxPerThread: number, maxThreads: number) {
    this.#threads = new LruMap(maxThreads);
    this.#maxPerThread = maxPerThread;
  }

  /** `memories` minus those already injected in `thread`. */
  unseen<T extends { id: string }>(thread: string, memories: readonly T[]): T[] {
    const seen = this.#threads.get(thread);
    return seen === undefined ? [...memories] : memories.filter((memory) => !seen.has(memory.id));
  }

  /** Record that `ids` were injected in `thread`. */
  remember(thread: string, ids: readonly string[]): void {
    let seen = this.#threads.get(thread);
    if (seen === undefined) {
      seen = new LruMap(this.#maxPerThread);
      this.#threads.set(thread, seen);
    }
    for (const id of ids) seen.set(id, true);
  }

  /** Number of threads currently tracked. */
  get threadCount(): number {
    return this.#threads.size;
  }
}
