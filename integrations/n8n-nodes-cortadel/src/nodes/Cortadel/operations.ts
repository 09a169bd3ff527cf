import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { jsonParse, NodeApiError, NodeOperationError } from 'n8n-workflow';

import {
	addConversation,
	addMemory,
	deleteMemories,
	getMemory,
	listMemories,
	searchMemories,
} from '../../shared/requests';
import type { Transport } from '../../shared/transport';
import { textParameter } from '../../shared/parameters';
import { APP_NAME, httpStatusOf, splitList } from '../../shared/transport';
import type {
	ConversationIngestResponse,
	ConversationMessage,
	DeleteResponse,
	ListQuery,
	ListResponse,
	MemoryCreated,
	MemoryDetail,
	MemoryType,
	SearchMode,
	SearchResponse,
} from '../../shared/types';
import type { Operation } from './description';

/** Everything an operation needs for one input item. */
interface ItemScope {
	context: IExecuteFunctions;
	send: Transport;
	itemIndex: number;
	userId: string;
}

type OperationHandler = (scope: ItemScope) => Promise<IDataObject[]>;

const RETURN_ALL_PAGE_SIZE = 100;

function param<T>(scope: ItemScope, name: string, fallback?: T): T {
	return scope.context.getNodeParameter(name, scope.itemIndex, fallback) as T;
}

function options<T extends object>(scope: ItemScope): Partial<T> {
	return param<Partial<T>>(scope, 'options', {});
}

function parseMetadata(scope: ItemScope, raw: unknown): Record<string, unknown> | undefined {
	if (raw === undefined || raw === '') return undefined;
	const value: unknown = typeof raw === 'string' ? jsonParse(raw, { fallbackValue: null }) : raw;
	if (typeof value !== 'object' || value === null || Array.isArray(value)) {
		throw new NodeOperationError(scope.context.getNode(), 'Metadata must be a JSON object', {
			itemIndex: scope.itemIndex,
		});
	}
	return value as Record<string, unknown>;
}

const add: OperationHandler = async (scope) => {
	const opts = options<{ app: string; infer: boolean; memoryType: MemoryType; metadata: unknown }>(
		scope,
	);
	const created = await scope.send<MemoryCreated>(
		addMemory({
			user_id: scope.userId,
			text: param<string>(scope, 'text'),
			app: opts.app || APP_NAME,
			infer: opts.infer,
			memory_type: opts.memoryType,
			metadata: parseMetadata(scope, opts.metadata),
		}),
	);
	return [created as unknown as IDataObject];
};

const addConversationOperation: OperationHandler = async (scope) => {
	const opts = options<{ sessionId: string; project: string; tags: string; isAgentMemory: boolean }>(
		scope,
	);
	const collection = param<{ message?: ConversationMessage[] }>(scope, 'messages', {});
	const messages = (collection.message ?? []).filter((message) => message.content.trim() !== '');
	if (messages.length === 0) {
		throw new NodeOperationError(scope.context.getNode(), 'Add at least one message with content', {
			itemIndex: scope.itemIndex,
		});
	}
	const response = await scope.send<ConversationIngestResponse>(
		addConversation({
			user_id: scope.userId,
			messages: messages.map(({ role, content }) => ({ role, content })),
			session_id: opts.sessionId,
			project: opts.project,
			tags: splitList(opts.tags),
			is_agent_memory: opts.isAgentMemory,
		}),
	);
	return 'results' in response
		? response.results.map((item) => item as unknown as IDataObject)
		: [{ no_facts_extracted: true }];
};

const search: OperationHandler = async (scope) => {
	const opts = options<{
		topK: number;
		mode: SearchMode;
		sessionId: string;
		rerank: boolean;
		memoryType: MemoryType;
	}>(scope);
	const found = await scope.send<SearchResponse>(
		searchMemories({
			query: param<string>(scope, 'query'),
			user_id: scope.userId,
			top_k: opts.topK ?? 10,
			mode: opts.mode,
			app_name: APP_NAME,
			session_id: opts.sessionId,
			rerank: opts.rerank ? 'cross_encoder' : undefined,
			memory_type: opts.memoryType,
		}),
	);
	return found.results.map((hit) => hit as unknown as IDataObject);
};

const list: OperationHandler = async (scope) => {
	const opts = options<{
		page: number;
		appId: string;
		categories: string;
		searchQuery: string;
		includeSuperseded: boolean;
		memoryType: MemoryType;
	}>(scope);
	const returnAll = param<boolean>(scope, 'returnAll', false);
	const query = (page: number, size: number): ListQuery => ({
		user_id: scope.userId,
		page,
		size,
		app_id: opts.appId,
		categories: opts.categories,
		search_query: opts.searchQuery,
		include_superseded: opts.includeSuperseded ? 'true' : undefined,
		memory_type: opts.memoryType,
	});
	const firstPage = opts.page ?? 1;
	if (!returnAll) {
		const page = await scope.send<ListResponse>(listMemories(query(firstPage, param(scope, 'limit', 50))));
		return page.items as IDataObject[];
	}
	const items: IDataObject[] = [];
	for (let pageNumber = firstPage; ; pageNumber++) {
		const page = await scope.send<ListResponse>(
			listMemories(query(pageNumber, RETURN_ALL_PAGE_SIZE)),
		);
		items.push(...(page.items as IDataObject[]));
		if (page.items.length === 0 || pageNumber >= page.pages) return items;
	}
};

const get: OperationHandler = async (scope) => {
	const memoryId = param<string>(scope, 'memoryId').trim();
	try {
		return [(await scope.send<MemoryDetail>(getMemory(scope.userId, memoryId))) as IDataObject];
	} catch (error) {
		if (httpStatusOf(error) !== 404) throw error;
		// n8n's request helper already throws a NodeApiError, which the constructor would hand
		// back unchanged; a fresh error object is what lets the message name the memory.
		const detail = error instanceof Error ? error.message : String(error);
		throw new NodeApiError(scope.context.getNode(), { message: detail }, {
			message: `Memory ${memoryId} not found for user ${scope.userId}`,
			description: 'Cortadel has no memory with this ID for this user (it may have been deleted).',
			httpCode: '404',
			itemIndex: scope.itemIndex,
		});
	}
};

const remove: OperationHandler = async (scope) => {
	const ids = splitList(param<string>(scope, 'memoryIds'));
	if (ids.length === 0) {
		throw new NodeOperationError(scope.context.getNode(), 'Memory IDs is empty', {
			itemIndex: scope.itemIndex,
		});
	}
	const response = await scope.send<DeleteResponse>(
		deleteMemories({ user_id: scope.userId, memory_ids: ids }),
	);
	return [{ ...response, memory_ids: ids }];
};

export const operations: Record<Operation, OperationHandler> = {
	add,
	addConversation: addConversationOperation,
	search,
	list,
	get,
	delete: remove,
};

export function runOperation(
	operation: Operation,
	context: IExecuteFunctions,
	send: Transport,
	itemIndex: number,
): Promise<IDataObject[]> {
	const userId = textParameter(context.getNodeParameter('userId', itemIndex, ''));
	if (!userId) {
		throw new NodeOperationError(context.getNode(), 'User ID is empty', { itemIndex });
	}
	return operations[operation]({ context, send, itemIndex, userId });
}
