import { CortadelClient } from "@cortadel/sdk";
import { LruMap } from "./lru.js";

/** How many per-user clients a pool keeps before dropping the least recently used one. */
export const MAX_CACHED_CLIENTS = 128;

/** The part of `CortadelClient` this package calls. Implement it to wrap or fake the SDK. */
export type CortadelClientLike = Pick<CortadelClient, "add" | "addConversation" | "search">;

export interface CortadelClientPoolOptions {
  /** Server URL. Default: `$CORTADEL_BASE_URL`, then `http://localhost:3001`. */
  baseUrl?: string;
  /** Bearer key. Default: `$CORTADEL_API_KEY`; leave unset when the server runs without auth. */
  apiKey?: string;
  /** Per-request timeout handed to the SDK. Default: the SDK's own (100 s); `0` disables it. */
  timeoutMs?: number;
  /** Build the client for one user id. Default: a real `CortadelClient` from the options above. */
  createClient?: (userId: string) => CortadelClientLike;
}

/**
 * One Cortadel client per user id, created on first use. A `CortadelClient` is bound to a single
 * user, so a multi-user agent needs one per person; the pool keeps the `MAX_CACHED_CLIENTS` most
 * recently used and lets older ones go.
 *
 * ```ts
 * const pool = new CortadelClientPool({ baseUrl: "http://localhost:3001" });
 * await pool.get("alice").search("release days");
 * ```
 */
export class CortadelClientPool {
  readonly #clients = new LruMap<string, CortadelClientLike>(MAX_CACHED_CLIENTS);
  readonly #create: (userId: string) => CortadelClientLike;

  constructor(options: CortadelClientPoolOptions = {}) {
    const { baseUrl, apiKey, timeoutMs } = options;
    this.#create = options.createClient ?? ((userId) => new CortadelClient({ baseUrl, apiKey, timeoutMs, userId }));
  }

  /** Number of clients currently held. */
  get size(): number {
    return this.#clients.size;
  }

  /** Whether a client for `userId` is currently held (does not count as a use). */
  has(userId: string): boolean {
    return this.#clients.has(userId);
  }

  /** The client for `userId`, creating it on first use. */
  get(userId: string): CortadelClientLike {
    let client = this.#clients.get(userId);
    if (client === undefined) {
      client = this.#create(userId);
      this.#clients.set(userId, client);
    }
    return client;
  }
}
