/**
 * Reconciliation: runs that find duplicate entities and stale facts of a user, and the suggestions
 * they make (approve, reject, undo). Cortadel server extensions: their types and their wire.
 */
import { count, definedOnly, type Json, object, strings, text } from "./wire.js";

/** What `reconcile` looks at. */
export interface ReconcileOptions {
  /** How many of the most recent facts (and most mentioned entities); default 500, at most 5000. */
  limit?: number;
  /** `entities` (duplicates, aliases) and/or `facts` (stale); default both. */
  types?: readonly ("entities" | "facts")[];
}

/** One reconciliation run; `status` is queued, running, completed, failed or cancelled. */
export interface ReconcileRun {
  id: string;
  status: string;
  types: string[];
  limit: number;
  createdAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  error: string | null;
  /** Findings this run stored as suggestions. */
  suggested: number;
  /** Of those, applied at once (sure enough for the server's auto-approve setting). */
  autoApproved: number;
}

/** The latest run (or the one asked for); `status` is `idle` when there is none. */
export interface ReconcileStatus {
  status: string;
  run: ReconcileRun | null;
}

/** A finding: `kind` merge_entities, alias or supersede; `status` pending, approved or rejected. */
export interface MergeSuggestion {
  id: string;
  kind: string;
  status: string;
  confidence: number;
  /** What it acts on (entity names, memory ids). */
  subject: Record<string, unknown>;
  /** Why: the rule, the memory ids it read, an LLM verdict. */
  evidence: Record<string, unknown>[];
  runId: string | null;
  createdAt: number | null;
  decidedAt: number | null;
  /** `auto` (applied by a run) or `hand`. */
  decidedBy: string | null;
  undoneAt: number | null;
}

/** One page of suggestions, newest first, and how many there are in all. */
export interface MergeSuggestionPage {
  items: MergeSuggestion[];
  total: number;
}

export interface MergeSuggestionQuery {
  status?: "pending" | "approved" | "rejected";
  offset?: number;
  limit?: number;
}

export const RECONCILE = "/api/v1/reconcile";

export function startBody(userId: string, options: ReconcileOptions): Json {
  return definedOnly({ user_id: userId, limit: options.limit, types: options.types });
}

export function statusQuery(userId: string, runId: string | undefined): URLSearchParams {
  const query = new URLSearchParams({ user_id: userId });
  if (runId !== undefined) query.set("run_id", runId);
  return query;
}

export function suggestionsQuery(userId: string, options: MergeSuggestionQuery): URLSearchParams {
  const query = new URLSearchParams({ user_id: userId });
  if (options.status !== undefined) query.set("status", options.status);
  if (options.offset !== undefined) query.set("offset", String(options.offset));
  if (options.limit !== undefined) query.set("limit", String(options.limit));
  return query;
}

export function reconcileRun(body: unknown): ReconcileRun {
  const b = object(body, "the reconciliation run");
  return {
    id: text(b.id) ?? "",
    status: text(b.status) ?? "",
    types: strings(b.types),
    limit: count(b.limit) ?? 0,
    createdAt: count(b.created_at),
    startedAt: count(b.started_at),
    finishedAt: count(b.finished_at),
    error: text(b.error),
    suggested: count(b.suggested) ?? 0,
    autoApproved: count(b.auto_approved) ?? 0,
  };
}

export function reconcileStatus(body: unknown): ReconcileStatus {
  const b = object(body, "the reconciliation status");
  return { status: text(b.status) ?? "", run: b.run ? reconcileRun(b.run) : null };
}

export function mergeSuggestion(body: unknown): MergeSuggestion {
  const s = object(body, "a suggestion");
  return {
    id: text(s.id) ?? "",
    kind: text(s.kind) ?? "",
    status: text(s.status) ?? "",
    confidence: count(s.confidence) ?? 0,
    subject: s.subject && typeof s.subject === "object" ? (s.subject as Record<string, unknown>) : {},
    evidence: Array.isArray(s.evidence) ? (s.evidence as Record<string, unknown>[]) : [],
    runId: text(s.run_id),
    createdAt: count(s.created_at),
    decidedAt: count(s.decided_at),
    decidedBy: text(s.decided_by),
    undoneAt: count(s.undone_at),
  };
}

export function mergeSuggestionPage(body: unknown): MergeSuggestionPage {
  const b = object(body, "the suggestions response");
  return { items: (Array.isArray(b.items) ? b.items : []).map(mergeSuggestion), total: count(b.total) ?? 0 };
}
