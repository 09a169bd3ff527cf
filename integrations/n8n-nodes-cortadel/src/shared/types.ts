/**
 * Wire DTOs of the Cortadel REST contract, transcribed by hand so the package needs no
 * run-time dependency on the SDK. Field names are the server's (snake_case).
 */

export type SearchMode = 'hybrid' | 'text' | 'vector';
export type MemoryType = 'episodic' | 'semantic' | 'procedural';
export type ConversationRole = 'user' | 'assistant' | 'system';

export interface ConversationMessage {
	role: ConversationRole;
	content: string;
	uuid?: string;
}

export interface CreateMemoryBody {
	user_id: string;
	text: string;
	infer?: boolean;
	app?: string;
	memory_type?: MemoryType;
	metadata?: Record<string, unknown>;
}

export interface MemoryCreated {
	id: string;
	content: string;
	state: string;
	created_at: string;
	event: string;
	app_name: string | null;
	metadata: string | null;
}

export interface AddConversationBody {
	user_id: string;
	messages: ConversationMessage[];
	is_agent_memory?: boolean;
	tags?: string[];
	project?: string;
	session_id?: string;
}

export interface ConversationIngestItem {
	id: string;
	memory: string;
	event: string;
	error: string | null;
}

export type ConversationIngestResponse =
	| { results: ConversationIngestItem[] }
	| { no_facts_extracted: true };

export interface SearchBody {
	query: string;
	user_id: string;
	top_k?: number;
	mode?: SearchMode;
	app_name?: string;
	session_id?: string;
	rerank?: 'cross_encoder';
	memory_type?: MemoryType;
}

export interface SearchHit {
	id: string;
	content: string;
	rrf_score: number;
	created_at: string;
	app_name: string | null;
	categories: string[] | null;
	memory_type: string | null;
	tags: string[] | null;
	[key: string]: unknown;
}

export interface SearchResponse {
	query: string;
	total: number;
	results: SearchHit[];
}

export interface ListQuery {
	user_id: string;
	page: number;
	size: number;
	app_id?: string;
	categories?: string;
	search_query?: string;
	include_superseded?: 'true';
	memory_type?: MemoryType;
}

export interface ListItem {
	id: string;
	content: string;
	created_at: number;
	state: string;
	memory_type: string | null;
	[key: string]: unknown;
}

export interface ListResponse {
	items: ListItem[];
	total: number;
	page: number;
	size: number;
	pages: number;
}

export interface MemoryDetail {
	id: string;
	text: string;
	created_at: number;
	valid_at: string | null;
	invalid_at: string | null;
	is_current: boolean;
	superseded_by: string | null;
	[key: string]: unknown;
}

export interface DeleteBody {
	user_id: string;
	memory_ids: string[];
}

export interface DeleteResponse {
	message: string;
}
