import type { CortadelRequest } from './transport';
import { compact } from './transport';
import type {
	AddConversationBody,
	CreateMemoryBody,
	DeleteBody,
	ListQuery,
	SearchBody,
} from './types';

/** The six memory routes of the REST contract, one builder each. Unset optional fields are omitted. */

export function addMemory(body: CreateMemoryBody): CortadelRequest {
	return { method: 'POST', path: '/api/v1/memories', body: compact(body) };
}

export function addConversation(body: AddConversationBody): CortadelRequest {
	return {
		method: 'POST',
		path: '/api/v1/memories/from-conversation',
		body: compact({ ...body, tags: body.tags?.length ? body.tags : undefined }),
	};
}

export function searchMemories(body: SearchBody): CortadelRequest {
	return { method: 'POST', path: '/api/v1/memories/search', body: compact(body) };
}

export function listMemories(query: ListQuery): CortadelRequest {
	return { method: 'GET', path: '/api/v1/memories', qs: compact(query) };
}

export function getMemory(userId: string, memoryId: string): CortadelRequest {
	return {
		method: 'GET',
		path: `/api/v1/memories/${encodeURIComponent(memoryId)}`,
		qs: { user_id: userId },
	};
}

export function deleteMemories(body: DeleteBody): CortadelRequest {
	return { method: 'DELETE', path: '/api/v1/memories', body: compact(body) };
}
