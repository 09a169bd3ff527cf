/**
 * One HTTP exchange with the server: timeout and caller abort on one AbortController, no redirects,
 * no retries, JSON in and out, every failure translated to the `CortadelError` tree.
 */
import {
  CortadelAbortError,
  CortadelConnectionError,
  CortadelError,
  CortadelTimeoutError,
} from "./errors.js";
import { WireShapeError } from "./wire.js";

export interface Connection {
  baseUrl: string;
  apiKey: string | undefined;
  timeoutMs: number;
  fetch: typeof fetch;
}

export interface Exchange<T> {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  signal?: AbortSignal;
  /** Non-2xx statuses whose JSON body is still a result (health's 503, get's 404). */
  alsoAccept?: readonly number[];
  decode: (body: unknown, status: number) => T;
}

/** Fallback codes for error bodies that carry none. */
const CODE_BY_STATUS: Record<number, string> = {
  400: "validation_error",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  500: "internal_error",
};

export async function exchange<T>(connection: Connection, request: Exchange<T>): Promise<T> {
  const { signal } = request;
  if (signal?.aborted) throw new CortadelAbortError(signal.reason);

  const controller = new AbortController();
  let timedOut = false;
  const timer =
    connection.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, connection.timeoutMs)
      : undefined;
  const forwardAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", forwardAbort, { once: true });

  const failure = (cause: unknown): CortadelError => {
    if (timedOut) return new CortadelTimeoutError(connection.timeoutMs);
    if (signal?.aborted) return new CortadelAbortError(signal.reason);
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new CortadelConnectionError({
      message: `Cannot reach Cortadel at ${connection.baseUrl}: ${reason}`,
      cause,
    });
  };

  let response: Response;
  let raw: string;
  try {
    response = await connection.fetch(url(connection.baseUrl, request), {
      method: request.method,
      headers: headers(connection.apiKey, request.body !== undefined),
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      redirect: "manual",
      signal: controller.signal,
    });
    raw = await response.text();
  } catch (cause) {
    throw failure(cause);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", forwardAbort);
  }

  const { status } = response;
  const body = parseJson(response, raw);
  const accepted = (status >= 200 && status < 300) || (request.alsoAccept ?? []).includes(status);
  if (!accepted) throw errorFromBody(status, body, response.headers.get("x-request-id"));
  try {
    return request.decode(body, status);
  } catch (cause) {
    if (!(cause instanceof WireShapeError)) throw cause;
    throw new CortadelConnectionError({
      status,
      code: "invalid_response",
      message: `Unexpected response from ${request.method} ${request.path}: ${cause.message}`,
      cause,
    });
  }
}

function url(baseUrl: string, request: Exchange<unknown>): string {
  const query = request.query?.toString();
  return `${baseUrl}${request.path}${query ? `?${query}` : ""}`;
}

function headers(apiKey: string | undefined, hasBody: boolean): Record<string, string> {
  return {
    Accept: "application/json",
    ...(hasBody ? { "Content-Type": "application/json" } : {}),
    ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}),
  };
}

/** Anything but a JSON body is a transport failure, whatever the status. */
function parseJson(response: Response, raw: string): unknown {
  const contentType = response.headers.get("content-type") ?? "";
  const notJson = (why: string, cause?: unknown) =>
    new CortadelConnectionError({
      status: response.status,
      requestId: response.headers.get("x-request-id"),
      code: "invalid_response",
      message: `Cortadel answered HTTP ${response.status} with ${why}`,
      cause,
    });
  if (!/\bjson\b/i.test(contentType)) throw notJson(`a non-JSON body (${contentType || "no content type"})`);
  try {
    return JSON.parse(raw);
  } catch (cause) {
    throw notJson("malformed JSON", cause);
  }
}

function errorFromBody(status: number, body: unknown, requestId: string | null): CortadelError {
  const b = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const str = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
  const fieldErrors =
    typeof b.errors === "object" && b.errors !== null
      ? Object.entries(b.errors as Record<string, unknown>)
          .map(([field, messages]) => `${field}: ${[messages].flat().join(", ")}`)
          .join("; ")
      : "";
  const title = str(b.title) ?? `HTTP ${status}`;
  return new CortadelError({
    status,
    code: str(b.code) ?? CODE_BY_STATUS[status] ?? (status >= 500 ? "internal_error" : "http_error"),
    message: str(b.message) ?? (fieldErrors ? `${title} (${fieldErrors})` : title),
    detail: str(b.detail) ?? null,
    requestId,
  });
}
