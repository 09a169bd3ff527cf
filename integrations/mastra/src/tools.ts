import type { SearchResult } from "@cortadel/sdk";
import { createTool, type ToolExecutionContext } from "@mastra/core/tools";
import { z } from "zod";
import { withDeadline } from "./deadline.js";
import { ErrorPolicy, type MemoryOperation } from "./errors.js";
import { checkInteger, DEFAULT_APP_NAME, TOOL_DEFAULTS, type CortadelToolsOptions } from "./options.js";
import { CortadelClientPool, type CortadelClientLike } from "./pool.js";
import { resolveScope, scopeOfToolCall, type ResolvedScope } from "./scope.js";

const searchInput = z.object({
  query: z.string().min(1).describe("What to look for, in natural language."),
  topK: z.number().int().min(1).max(50).optional().describe("How many memories to return (1-50)."),
});

const searchOutput = z.object({
  memories: z.array(
    z.object({
      id: z.string(),
      content: z.string(),
      score: z.number().optional(),
      createdAt: z.string().optional(),
      categories: z.array(z.string()).optional(),
    }),
  ),
  count: z.number().int(),
  error: z.string().optional(),
});

const addInput = z.object({
  statements: z
    .array(z.string().min(1))
    .min(1)
    .describe("Self-contained facts to remember, one per item, e.g. \"User deploys only on Tuesdays\"."),
});

const addOutput = z.object({
  stored: z.array(
    z.object({
      text: z.string(),
      id: z.string().optional(),
      event: z.string().optional(),
      error: z.string().optional(),
    }),
  ),
  count: z.number().int(),
  error: z.string().optional(),
});

export type SearchMemoryInput = z.infer<typeof searchInput>;
export type SearchMemoryOutput = z.infer<typeof searchOutput>;
export type AddMemoriesInput = z.infer<typeof addInput>;
export type AddMemoriesOutput = z.infer<typeof addOutput>;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function toMemory(result: SearchResult): SearchMemoryOutput["memories"][number] {
  return {
    id: result.id,
    content: result.content,
    score: result.rrfScore,
    ...(result.createdAt && { createdAt: result.createdAt }),
    ...(result.categories.length > 0 && { categories: result.categories }),
  };
}

/**
 * The two memory tools a model can call on its own: `search_memory` and `add_memories`. The keys
 * you register them under are the names the model sees (re-key to rename). Neither throws on a
 * Cortadel failure: the result carries an `error` field instead (unless `throwOnError` is set).
 *
 * ```ts
 * const tools = createCortadelTools({ baseUrl: "http://localhost:3001" });
 * new Agent({ ..., tools: { ...tools } });
 * ```
 */
export function createCortadelTools(options: CortadelToolsOptions = {}) {
  const pool = options.pool ?? new CortadelClientPool(options);
  const errors = new ErrorPolicy(options);
  const identity = { userId: options.userId, resolveUserId: options.resolveUserId };
  const appName = options.appName ?? DEFAULT_APP_NAME;
  const defaultTopK = checkInteger("topK", options.topK ?? TOOL_DEFAULTS.topK, 1, 50);
  const mode = options.searchMode ?? TOOL_DEFAULTS.searchMode;
  const rerank = options.rerank ?? false;
  const sessionOnly = options.scopeRecallToSession ?? false;
  const timeoutMs = checkInteger("timeoutMs", options.timeoutMs ?? TOOL_DEFAULTS.timeoutMs, 0);
  const prefix = options.idPrefix ? `${options.idPrefix}_` : "";

  /** The scope and client for one tool call, or the failure as a message for the model. */
  function connect(context: ToolExecutionContext | undefined, operation: MemoryOperation):
    | { scope: ResolvedScope; client: CortadelClientLike }
    | { error: string } {
    const scope = resolveScope(scopeOfToolCall(context), identity, errors);
    if (scope === undefined) return { error: "Memory is unavailable: no user id for this conversation." };
    try {
      return { scope, client: pool.get(scope.userId) };
    } catch (error) {
      errors.report(error, { operation, userId: scope.userId, threadId: scope.threadId });
      return { error: messageOf(error) };
    }
  }

  const search_memory = createTool({
    id: `${prefix}search_memory`,
    description:
      "Search the user's long-term memory for facts, preferences and decisions from earlier conversations. " +
      "Use it when the answer may depend on something the user said before.",
    inputSchema: searchInput,
    outputSchema: searchOutput,
    execute: async (input, context): Promise<SearchMemoryOutput> => {
      const connection = connect(context, "search-tool");
      if ("error" in connection) return { memories: [], count: 0, error: connection.error };
      const { scope, client } = connection;
      try {
        const response = await withDeadline(timeoutMs, context?.abortSignal, (signal) =>
          client.search(
            input.query,
            {
              topK: input.topK ?? defaultTopK,
              mode,
              appName,
              ...(rerank && { rerank: "cross_encoder" as const }),
              ...(sessionOnly && scope.threadId !== undefined && { sessionId: scope.threadId }),
            },
            signal,
          ),
        );
        const memories = response.results.map(toMemory);
        return { memories, count: memories.length };
      } catch (error) {
        errors.report(error, { operation: "search-tool", userId: scope.userId, threadId: scope.threadId });
        return { memories: [], count: 0, error: messageOf(error) };
      }
    },
  });

  const add_memories = createTool({
    id: `${prefix}add_memories`,
    description:
      "Store durable facts about the user in long-term memory so later conversations can use them. " +
      "Each statement should stand on its own. The result reports what Cortadel did with each one " +
      "(ADD, SKIP_DUPLICATE, SUPERSEDE, ...).",
    inputSchema: addInput,
    outputSchema: addOutput,
    execute: async (input, context): Promise<AddMemoriesOutput> => {
      const connection = connect(context, "add-tool");
      if ("error" in connection) return { stored: [], count: 0, error: connection.error };
      const { scope, client } = connection;
      // All statements go out at once; with throwOnError the first failure rejects this call.
      const stored = await Promise.all(
        input.statements.map(async (text): Promise<AddMemoriesOutput["stored"][number]> => {
          try {
            const result = await withDeadline(timeoutMs, context?.abortSignal, (signal) =>
              client.add(text, { app: appName }, signal),
            );
            return result.event === "ERROR"
              ? { text, event: result.event, error: result.error || "Cortadel could not store this statement." }
              : { text, id: result.id, event: result.event };
          } catch (error) {
            errors.report(error, { operation: "add-tool", userId: scope.userId, threadId: scope.threadId });
            return { text, error: messageOf(error) };
          }
        }),
      );
      return { stored, count: stored.filter((entry) => entry.error === undefined).length };
    },
  });

  return { search_memory, add_memories };
}

/** The tool set `createCortadelTools` returns. */
export type CortadelTools = ReturnType<typeof createCortadelTools>;
