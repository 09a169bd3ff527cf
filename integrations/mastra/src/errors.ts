/**
 * How memory failures surface. Every Cortadel call the package makes is wrapped: a failure is
 * handed to `onError` (a `console.warn` by default) and the turn carries on without memory, unless
 * `throwOnError` is set, in which case the same error is rethrown after `onError` has seen it.
 *
 * The errors themselves are the SDK's `CortadelError` family; this package adds one leaf:
 *
 * ```text
 * CortadelError (from @cortadel/sdk)
 * ├── CortadelTimeoutError   a recall, persist or tool call ran past its time box
 * ├── CortadelAbortError     the agent run was aborted first
 * ├── CortadelConnectionError
 * └── UnresolvedUserError    no Cortadel user id for this run (code "unresolved_user")
 * ```
 */
import { CortadelError } from "@cortadel/sdk";

/** The package step that failed, as reported in `MemoryErrorContext.operation`. */
export type MemoryOperation = "recall" | "persist" | "search-tool" | "add-tool" | "resolve-user-id";

/** What `onError` is told about a failure besides the error itself. */
export interface MemoryErrorContext {
  operation: MemoryOperation;
  /** The Cortadel user id, when one had been resolved. */
  userId?: string;
  /** Mastra's thread id (the Cortadel session), when the run had one. */
  threadId?: string;
}

/** Called once for every memory failure. */
export type MemoryErrorHandler = (error: unknown, context: MemoryErrorContext) => void;

/** No Cortadel user id could be derived from `resolveUserId`, `userId` or Mastra's `resourceId`. */
export class UnresolvedUserError extends CortadelError {
  override name = "UnresolvedUserError";

  constructor(message = "No Cortadel user id: pass memory.resource, set userId, or supply resolveUserId") {
    super({ status: 0, code: "unresolved_user", message });
  }
}

export interface ErrorPolicyOptions {
  /**
   * Called on every Cortadel failure with the error and `{ operation, userId?, threadId? }`.
   * Replaces the default `console.warn`.
   */
  onError?: MemoryErrorHandler;
  /** Rethrow every failure after `onError` instead of degrading to no memory. Default `false`. */
  throwOnError?: boolean;
}

function warn(error: unknown, context: MemoryErrorContext): void {
  const reason = error instanceof Error ? error.message : String(error);
  console.warn(`[@cortadel/mastra] ${context.operation} failed: ${reason}`);
}

/** Applies `onError` / `throwOnError` to one failure. */
export class ErrorPolicy {
  readonly #onError: MemoryErrorHandler;
  readonly #throw: boolean;

  constructor(options: ErrorPolicyOptions) {
    this.#onError = options.onError ?? warn;
    this.#throw = options.throwOnError ?? false;
  }

  /**
   * Report `error`; rethrow it when `throwOnError` is set and a caller is still there to receive it
   * (`canThrow: false` for fire-and-forget work).
   */
  report(error: unknown, context: MemoryErrorContext, canThrow = true): void {
    this.#onError(error, context);
    if (this.#throw && canThrow) throw error;
  }
}
