import type { MastraDBMessage } from "@mastra/core/agent/message-list";
import { MASTRA_RESOURCE_ID_KEY, MASTRA_THREAD_ID_KEY, type RequestContext } from "@mastra/core/request-context";
import type { ToolExecutionContext } from "@mastra/core/tools";
import { ErrorPolicy, UnresolvedUserError } from "./errors.js";

/** Who and where a run is, as Mastra sees it. Passed to `resolveUserId`. */
export interface MemoryScope {
  /** Mastra's resource (the person); becomes the Cortadel user id unless overridden. */
  resourceId?: string;
  /** Mastra's thread (the conversation); becomes the Cortadel session id. */
  threadId?: string;
  /** The run's RequestContext, for ids your middleware put there under your own keys. */
  requestContext?: RequestContext;
}

/** A scope with the Cortadel user id it resolved to. */
export interface ResolvedScope extends MemoryScope {
  userId: string;
}

export interface IdentityOptions {
  /** Pin every run to this Cortadel user id. */
  userId?: string;
  /**
   * Derive the user id from the run. Highest precedence; return `undefined` or `null` to fall
   * through to `userId`, then to Mastra's `resourceId`.
   */
  resolveUserId?: (scope: MemoryScope) => string | undefined | null;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function fromContext(requestContext: RequestContext | undefined, key: string): string | undefined {
  return text(requestContext?.get(key as never));
}

function newestCarrying(messages: readonly MastraDBMessage[], field: "resourceId" | "threadId"): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const value = text(messages[i]?.[field]);
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * The scope of a processor run: Mastra's well-known RequestContext keys first, then the newest
 * message that carries a resource / thread id.
 */
export function scopeOfRun(requestContext: RequestContext | undefined, messages: readonly MastraDBMessage[]): MemoryScope {
  return {
    resourceId: fromContext(requestContext, MASTRA_RESOURCE_ID_KEY) ?? newestCarrying(messages, "resourceId"),
    threadId: fromContext(requestContext, MASTRA_THREAD_ID_KEY) ?? newestCarrying(messages, "threadId"),
    requestContext,
  };
}

/** The scope of a tool call: the calling agent's ids first, then the RequestContext keys. */
export function scopeOfToolCall(context: ToolExecutionContext | undefined): MemoryScope {
  const requestContext = context?.requestContext;
  return {
    resourceId: text(context?.agent?.resourceId) ?? fromContext(requestContext, MASTRA_RESOURCE_ID_KEY),
    threadId: text(context?.agent?.threadId) ?? fromContext(requestContext, MASTRA_THREAD_ID_KEY),
    requestContext,
  };
}

/**
 * The Cortadel user id for `scope`: `resolveUserId(scope)`, then the pinned `userId`, then
 * Mastra's `resourceId`. When none yields an id (or `resolveUserId` throws) the failure is
 * reported as `resolve-user-id` and `undefined` is returned; memory then sits this run out.
 */
export function resolveScope(scope: MemoryScope, options: IdentityOptions, errors: ErrorPolicy): ResolvedScope | undefined {
  let userId: string | undefined;
  try {
    userId = text(options.resolveUserId?.(scope)) ?? text(options.userId) ?? scope.resourceId;
  } catch (error) {
    errors.report(error, { operation: "resolve-user-id", threadId: scope.threadId });
    return undefined;
  }
  if (userId === undefined) {
    errors.report(new UnresolvedUserError(), { operation: "resolve-user-id", threadId: scope.threadId });
    return undefined;
  }
  return { ...scope, userId };
}
