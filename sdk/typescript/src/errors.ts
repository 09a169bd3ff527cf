/**
 * Every failure the client raises is a `CortadelError`:
 *
 * ```text
 * CortadelError               the server answered with an error status (status = HTTP status)
 * ├── CortadelTimeoutError    no answer within `timeoutMs`            (status 0, code "timeout")
 * ├── CortadelAbortError      the caller's AbortSignal fired          (status 0, code "aborted")
 * └── CortadelConnectionError no usable answer: network failure, or a
 *                             body that is not the JSON the contract names
 *                             (status 0 or the HTTP status, code "connection_error" / "invalid_response")
 * ```
 *
 * `status > 0` on a plain `CortadelError` is always a real HTTP status with the server's error
 * `code` (`not_found`, `validation_error`, `unauthorized`, `forbidden`, `internal_error`, ...).
 */

/** What every Cortadel error carries. */
export interface CortadelErrorInit {
  /** HTTP status of the response, or `0` when no response was received. */
  status: number;
  /** Short machine-readable code, e.g. `"not_found"` or `"timeout"`. */
  code: string;
  /** Human-readable explanation. */
  message: string;
  /** Extra detail from the server's error body, when it sent one. */
  detail?: string | null;
  /** The response's `X-Request-Id`, to find the request in the server log. */
  requestId?: string | null;
  /** The underlying error (a fetch `TypeError`, a JSON `SyntaxError`, ...). */
  cause?: unknown;
}

export class CortadelError extends Error {
  override name = "CortadelError";
  readonly status: number;
  readonly code: string;
  readonly detail: string | null;
  readonly requestId: string | null;

  constructor(init: CortadelErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail ?? null;
    this.requestId = init.requestId ?? null;
  }
}

/** The request took longer than the client's `timeoutMs`. */
export class CortadelTimeoutError extends CortadelError {
  override name = "CortadelTimeoutError";
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super({ status: 0, code: "timeout", message: `Cortadel request timed out after ${timeoutMs} ms` });
    this.timeoutMs = timeoutMs;
  }
}

/** The caller's `AbortSignal` fired before the request finished. */
export class CortadelAbortError extends CortadelError {
  override name = "CortadelAbortError";

  constructor(reason?: unknown) {
    super({ status: 0, code: "aborted", message: "Cortadel request was aborted", cause: reason });
  }
}

/** The server could not be reached, or answered with something that is not Cortadel's JSON. */
export class CortadelConnectionError extends CortadelError {
  override name = "CortadelConnectionError";

  constructor(init: Omit<CortadelErrorInit, "code" | "status"> & { status?: number; code?: string }) {
    super({ ...init, status: init.status ?? 0, code: init.code ?? "connection_error" });
  }
}
