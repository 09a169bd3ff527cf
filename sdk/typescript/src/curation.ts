/**
 * Media (a document or an image remembered as facts) and communities (a user's entities grouped
 * by the facts that tie them together): Cortadel server extensions, their types and their wire.
 */
import { count, definedOnly, type Json, object, strings, text } from "./wire.js";

/** What `addMedia` sends besides the file. */
export interface AddMediaOptions {
  /** A text document (plain, Markdown or HTML); or send `data`. */
  text?: string;
  /** The file's bytes (a PDF, an image, any document); or send `text`. */
  data?: Uint8Array;
  /** One of the server's types (e.g. `application/pdf`); default: from the name. */
  mediaType?: string;
  /** What an image shows; without one the server's vision model writes it (if it has one). */
  caption?: string;
  project?: string;
  tags?: readonly string[];
  sessionId?: string;
}

/** One fact written from a document passage (or an image's caption). */
export interface MediaFact {
  id: string;
  memory: string;
  event: string;
  error: string | null;
  /** The PDF page (from 1); `null` for other media. */
  page: number | null;
  /** Characters from the start of the page's (or document's) text to the passage. */
  offset: number;
}

/** What `addMedia` stored; every memory has `mediaId` in its metadata, under `media.id`. */
export interface MediaResult {
  mediaId: string;
  name: string;
  mediaType: string;
  /** `document` or `image`. */
  kind: string;
  pages: number | null;
  passages: number;
  caption: string | null;
  /** `caller`, or the vision model that wrote the caption. */
  captionedBy: string | null;
  results: MediaFact[];
}

/** A group of the user's entities and the facts that mention them. */
export interface Community {
  id: string;
  /** 0: the finest grouping; 1: groups of level-0 communities (listed in `childIds`). */
  level: number;
  title: string;
  summary: string;
  /** `extractive`, or the LLM that wrote title and summary. */
  summarizedBy: string;
  entities: string[];
  memoryIds: string[];
  parentId: string | null;
  childIds: string[];
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export function addMediaBody(userId: string, name: string, options: AddMediaOptions): Json {
  return definedOnly({
    user_id: userId,
    name,
    media_type: options.mediaType,
    text: options.text,
    data: options.data === undefined ? undefined : base64(options.data),
    caption: options.caption,
    project: options.project,
    tags: options.tags,
    session_id: options.sessionId,
  });
}

export function mediaResult(body: unknown): MediaResult {
  const b = object(body, "the media response");
  return {
    mediaId: text(b.media_id) ?? "",
    name: text(b.name) ?? "",
    mediaType: text(b.media_type) ?? "",
    kind: text(b.kind) ?? "",
    pages: count(b.pages),
    passages: count(b.passages) ?? 0,
    caption: text(b.caption),
    captionedBy: text(b.captioned_by),
    results: (Array.isArray(b.results) ? b.results : []).map((item: unknown) => {
      const r = object(item, "a media result");
      return {
        id: text(r.id) ?? "",
        memory: text(r.memory) ?? "",
        event: text(r.event) ?? "",
        error: text(r.error),
        page: count(r.page),
        offset: count(r.offset) ?? 0,
      };
    }),
  };
}

export function communitiesQuery(userId: string, level: number | undefined): URLSearchParams {
  const query = new URLSearchParams({ user_id: userId });
  if (level !== undefined) query.set("level", String(level));
  return query;
}

export function communities(body: unknown): Community[] {
  const b = object(body, "the communities response");
  return (Array.isArray(b.communities) ? b.communities : []).map((item: unknown) => {
    const c = object(item, "a community");
    return {
      id: text(c.id) ?? "",
      level: count(c.level) ?? 0,
      title: text(c.title) ?? "",
      summary: text(c.summary) ?? "",
      summarizedBy: text(c.summarized_by) ?? "",
      entities: strings(c.entities),
      memoryIds: strings(c.memory_ids),
      parentId: text(c.parent_id),
      childIds: strings(c.child_ids),
    };
  });
}
