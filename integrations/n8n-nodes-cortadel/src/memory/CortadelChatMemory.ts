import type { IDataObject } from 'n8n-workflow';

import { addConversation, listMemories, searchMemories } from '../shared/requests';
import type { CortadelRequest, Transport } from '../shared/transport';
import { APP_NAME } from '../shared/transport';
import type {
	ConversationIngestResponse,
	ConversationMessage,
	ListResponse,
	MemoryType,
	SearchBody,
	SearchMode,
	SearchResponse,
} from '../shared/types';
import type { ContextFormat, ContextStyle, RecalledFact } from './context';
import { dedupeFacts, DEFAULT_CONTEXT_HEADER, renderMessages, renderText } from './context';
import { CortadelChatHistory } from './CortadelChatHistory';
import type { ContextRole, MessageFactory } from './messages';
import { RecallCache } from './recallCache';
import { TurnLedger } from './turnLedger';
import { textOf } from './turnText';

/** Everything the memory sub-node's fields and options resolve to. */
export interface MemorySettings {
	userId: string;
	sessionId?: string;
	scopeRecallToSession: boolean;
	topK: number;
	mode: SearchMode;
	rerank: boolean;
	memoryType?: MemoryType;
	contextFormat: ContextFormat;
	contextRole: ContextRole;
	contextHeader: string;
	memoryKey: string;
	inputKey: string;
	outputKey: string;
	returnMessages: boolean;
	persistTurns: boolean;
	project?: string;
	tags: string[];
	recallCacheTtlMs: number;
}

export const DEFAULT_MEMORY_SETTINGS: Omit<MemorySettings, 'userId'> = {
	scopeRecallToSession: false,
	topK: 5,
	mode: 'hybrid',
	rerank: false,
	contextFormat: 'block',
	contextRole: 'user',
	contextHeader: DEFAULT_CONTEXT_HEADER,
	memoryKey: 'chat_history',
	inputKey: 'input',
	outputKey: 'output',
	returnMessages: true,
	persistTurns: true,
	tags: [],
	recallCacheTtlMs: 15_000,
};

/** What the memory needs from the node that hosts it. */
export interface MemoryHooks {
	/** Report a swallowed Cortadel failure (n8n's node logger). */
	warn(message: string): void;
	/** Record one memory action in the execution log; call the result with its outcome. */
	logAction(action: string, input: IDataObject): (output: IDataObject) => void;
}

type Values = Record<string, unknown>;

/** An error's message, plus the server's detail that n8n's NodeApiError keeps in `description`. */
function errorMessage(error: unknown): string {
	if (!(error instanceof Error)) return String(error);
	const { description } = error as { description?: unknown };
	return typeof description === 'string' && description && description !== error.message
		? `${error.message} (${description})`
		: error.message;
}

/**
 * A LangChain-compatible chat memory (the `BaseChatMemory` contract n8n's AI Agent uses)
 * backed by Cortadel: every turn recalls relevant long-term facts and persists the exchange.
 * It never throws for a Cortadel failure — recall degrades to no context, persisting to a no-op.
 */
export class CortadelChatMemory {
	readonly memoryKey: string;
	readonly inputKey: string;
	readonly outputKey: string;
	readonly returnMessages: boolean;
	readonly chatHistory: CortadelChatHistory;

	private readonly cache: RecallCache<RecalledFact[]>;
	private readonly ledger = new TurnLedger();
	private readonly style: ContextStyle;

	constructor(
		private readonly settings: MemorySettings,
		private readonly send: Transport,
		private readonly messages: MessageFactory,
		private readonly hooks: MemoryHooks,
	) {
		this.memoryKey = settings.memoryKey;
		this.inputKey = settings.inputKey;
		this.outputKey = settings.outputKey;
		this.returnMessages = settings.returnMessages;
		this.cache = new RecallCache(settings.recallCacheTtlMs);
		this.style = {
			format: settings.contextFormat,
			role: settings.contextRole,
			header: settings.contextHeader,
		};
		this.chatHistory = new CortadelChatHistory(
			(input, output) => this.persistTurn(input, output),
			() => this.cache.clear(),
		);
	}

	get memoryKeys(): string[] {
		return [this.memoryKey];
	}

	/** Before the model call: recall facts relevant to the turn's input. */
	async loadMemoryVariables(values: Values): Promise<Values> {
		const finish = this.hooks.logAction('loadMemoryVariables', { values });
		const facts = await this.recall(textOf(values[this.inputKey]));
		const context = this.returnMessages
			? renderMessages(facts, this.style, this.messages)
			: renderText(facts, this.style);
		finish({ chatHistory: context, recalled: facts.length });
		return { [this.memoryKey]: context };
	}

	/** After the turn: hand the exchange to Cortadel's extraction pipeline. */
	async saveContext(inputs: Values, outputs: Values): Promise<void> {
		await this.persistTurn(textOf(inputs[this.inputKey]), textOf(outputs[this.outputKey]));
	}

	/** Drops the local recall cache. Long-term memory is never deleted from here. */
	async clear(): Promise<void> {
		this.cache.clear();
	}

	private async recall(query: string): Promise<RecalledFact[]> {
		const request = query ? this.searchRequest(query) : this.recentRequest();
		try {
			const facts = await this.cache.fetch(JSON.stringify(request), () => this.fetchFacts(request));
			return dedupeFacts(facts).slice(0, this.settings.topK);
		} catch (error) {
			this.hooks.warn(`Cortadel recall failed, continuing without memory context: ${errorMessage(error)}`);
			return [];
		}
	}

	private async fetchFacts(request: CortadelRequest): Promise<RecalledFact[]> {
		if (request.method === 'GET') {
			const page = await this.send<ListResponse>(request);
			return page.items.map((item) => ({ id: item.id, text: item.content ?? '' }));
		}
		const found = await this.send<SearchResponse>(request);
		return found.results.map((hit) => ({ id: hit.id, text: hit.content ?? '' }));
	}

	private searchRequest(query: string): CortadelRequest {
		const { settings } = this;
		const body: SearchBody = {
			query,
			user_id: settings.userId,
			top_k: settings.topK,
			mode: settings.mode,
			app_name: APP_NAME,
			memory_type: settings.memoryType,
		};
		if (settings.scopeRecallToSession && settings.sessionId) body.session_id = settings.sessionId;
		if (settings.rerank) body.rerank = 'cross_encoder';
		return searchMemories(body);
	}

	/** No query text reaches the memory (the agent's streaming branch): newest memories instead. */
	private recentRequest(): CortadelRequest {
		return listMemories({
			user_id: this.settings.userId,
			page: 1,
			size: this.settings.topK,
			memory_type: this.settings.memoryType,
		});
	}

	private async persistTurn(input: string, output: string): Promise<void> {
		const { settings } = this;
		if (!settings.persistTurns || (!input && !output)) return;
		const finish = this.hooks.logAction('saveContext', { input, output });
		if (!this.ledger.claim(input, output)) {
			finish({ skipped: 'this exchange was already stored by this execution' });
			return;
		}
		const messages: ConversationMessage[] = [];
		if (input) messages.push({ role: 'user', content: input });
		if (output) messages.push({ role: 'assistant', content: output });
		try {
			const response = await this.send<ConversationIngestResponse>(
				addConversation({
					user_id: settings.userId,
					messages,
					session_id: settings.sessionId,
					project: settings.project,
					tags: settings.tags,
				}),
			);
			finish(
				'results' in response
					? { events: response.results.map((item) => item.event) }
					: { noFactsExtracted: true },
			);
		} catch (error) {
			this.ledger.release(input, output);
			this.hooks.warn(`Cortadel could not store this turn: ${errorMessage(error)}`);
			finish({ error: errorMessage(error) });
		}
	}
}
