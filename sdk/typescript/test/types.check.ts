// Compile-time checks of the published declarations (ESM side). Run by `npm run typecheck`.
import {
  CortadelClient,
  CortadelError,
  CortadelTimeoutError,
  type AddResult,
  type MemoryEvent,
  type SearchOptions,
} from "@cortadel/sdk";

const client = new CortadelClient({ userId: "alice", timeoutMs: 5000 });

// `event` lists the known values but still accepts any string.
const known: MemoryEvent = "SKIP_DUPLICATE";
const future: MemoryEvent = "SOMETHING_NEW";
export const events: MemoryEvent[] = [known, future];

export async function usage(signal: AbortSignal): Promise<string[]> {
  const added: AddResult = await client.add("Alice likes tea", { app: "demo", memoryType: "semantic", infer: false });
  if (added.event === "ADD" || added.event === "SUPERSEDE") added.id.toUpperCase();
  const options: SearchOptions = { topK: 3, mode: "hybrid", rerank: "cross_encoder", sessionId: "t1", knownAt: new Date() };
  const found = await client.search("tea", options, signal);
  const scores: number[] = found.results.map((r) => r.rrfScore);
  const page = await client.list({ size: 5, includeSuperseded: true, asOf: "2026-01-01T00:00:00Z" });
  const memory = await client.get(page.items[0]?.id ?? "", signal);
  const text: string | undefined = memory?.text;
  const history = await client.history("id");
  const conversation = await client.addConversation(
    [{ role: "user", content: "I moved to Lisbon", uuid: "u1" }, { role: "assistant", content: "Noted" }],
    { sessionId: "t1", project: "p", tags: ["x"], isAgentMemory: false, transcriptPath: "/tmp/t.jsonl" },
  );
  const health = await client.health();
  const deleted = await client.delete([added.id]);
  return [String(scores[0]), text ?? "", String(history?.events.length), conversation.results[0]?.event ?? "",
    health.checks.memgraph.ok ? "ok" : "down", deleted.message];
}

export function classify(error: unknown): string {
  if (error instanceof CortadelTimeoutError) return `timeout after ${error.timeoutMs}`;
  if (error instanceof CortadelError) return `${error.status} ${error.code}: ${error.message}`;
  return "other";
}

// @ts-expect-error the client is bound to a user: no method takes a user id
void client.search("tea", { userId: "bob" });
// @ts-expect-error options are camelCase, not wire snake_case
void client.search("tea", { top_k: 3 });
// @ts-expect-error userId is required
new CortadelClient({ baseUrl: "http://localhost:3001" });
