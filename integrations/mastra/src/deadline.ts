import { CortadelAbortError, CortadelTimeoutError } from "@cortadel/sdk";

/**
 * Run `call` with an `AbortSignal` that fires after `timeoutMs` (`0` = never) or when `parent`
 * aborts, and settle as soon as it fires even if `call` ignores the signal. A time-out rejects with
 * `CortadelTimeoutError`, a parent abort with `CortadelAbortError`.
 */
export async function withDeadline<T>(
  timeoutMs: number,
  parent: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (parent?.aborted) throw new CortadelAbortError(parent.reason);
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(new CortadelAbortError(parent?.reason));
  parent?.addEventListener("abort", onParentAbort, { once: true });
  const timer = timeoutMs > 0 ? setTimeout(() => controller.abort(new CortadelTimeoutError(timeoutMs)), timeoutMs) : undefined;
  const fired = new Promise<never>((_, reject) => {
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason as Error), { once: true });
  });
  const running = Promise.resolve().then(() => call(controller.signal));
  running.catch(() => undefined); // a call that fails after the deadline has no one left to tell
  try {
    return await Promise.race([running, fired]);
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener("abort", onParentAbort);
  }
}
