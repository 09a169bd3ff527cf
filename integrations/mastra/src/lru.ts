/**
 * A Map with a size cap that forgets its least recently used entry first. Reading an entry with
 * `get` (or writing it with `set`) makes it the most recent one. Everything this package keeps per
 * user or per thread lives in one of these, so nothing grows without bound.
 */
export class LruMap<K, V> {
  readonly capacity: number;
  readonly #entries = new Map<K, V>();

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value, marking the entry as most recently used. */
  get(key: K): V | undefined {
    if (!this.#entries.has(key)) return undefined;
    const value = this.#entries.get(key) as V;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** The value, without changing the eviction order. */
  peek(key: K): V | undefined {
    return this.#entries.get(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** Store as the most recent entry, dropping the oldest one when over capacity. */
  set(key: K, value: V): this {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next().value as K;
      this.#entries.delete(oldest);
    }
    return this;
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  /** Keys from least to most recently used. */
  keys(): IterableIterator<K> {
    return this.#entries.keys();
  }
}
