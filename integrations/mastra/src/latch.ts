import { LruMap } from "./lru.js";

interface Held {
  turn: string;
  /** The write while it is in flight; `undefined` once it has landed. */
  inFlight: Promise<void> | undefined;
}

/** A write as seen by one caller of `TurnLatch.claim`. */
export interface ClaimedWrite {
  /** Settles with the write; rejects when it failed. */
  done: Promise<void>;
  /** `true` when this caller joined a write another caller started (and reports failures). */
  joined: boolean;
}

/**
 * Keeps the same turn from being written to a thread twice. A thread's latch is claimed when a
 * write starts and only becomes permanent when the write lands: an identical turn arriving while
 * the write is in flight joins it, one arriving after it landed is skipped, and a write that
 * failed releases the latch so an identical retry is written.
 */
export class TurnLatch {
  readonly #threads: LruMap<string, Held>;

  constructor(maxThreads: number) {
    this.#threads = new LruMap(maxThreads);
  }

  /** Start `write` for `turn` on `thread`, join the identical one in flight, or `undefined` if already written. */
  claim(thread: string, turn: string, write: () => Promise<void>): ClaimedWrite | undefined {
    const held = this.#threads.get(thread);
    if (held?.turn === turn) return held.inFlight && { done: held.inFlight, joined: true };
    const entry: Held = { turn, inFlight: undefined };
    entry.inFlight = Promise.resolve()
      .then(write)
      .then(
        () => {
          entry.inFlight = undefined;
        },
        (error: unknown) => {
          if (this.#threads.peek(thread) === entry) this.#threads.delete(thread);
          throw error;
        },
      );
    this.#threads.set(thread, entry);
    return { done: entry.inFlight, joined: false };
  }
}
