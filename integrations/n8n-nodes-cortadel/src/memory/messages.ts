import { createRequire } from 'node:module';

/** Roles recalled context can be injected under. */
export type ContextRole = 'user' | 'system';

/** The slice of a LangChain message this package creates and reads. */
export interface ChatMessageLike {
	readonly content: unknown;
	_getType(): string;
}

/** Builds chat messages, from the host's LangChain when it is there, else from the shim. */
export interface MessageFactory {
	readonly source: 'langchain' | 'shim';
	create(role: ContextRole, text: string): ChatMessageLike;
}

type MessageClass = new (fields: { content: string }) => ChatMessageLike;

interface LangChainMessagesModule {
	HumanMessage: MessageClass;
	SystemMessage: MessageClass;
}

/**
 * Stand-in for a LangChain message when `@langchain/core` cannot be loaded.
 *
 * LangChain treats any object with a `_getType` function as a finished message and hands it
 * to the provider converter untouched, and the converters read `additional_kwargs` and
 * `response_metadata` without checking they exist. So the shim carries every field a real
 * message has, not just `content`.
 */
export class ShimMessage implements ChatMessageLike {
	readonly type: 'human' | 'system';
	readonly content: string;
	readonly name: string | undefined = undefined;
	readonly id: string | undefined = undefined;
	readonly additional_kwargs: Record<string, unknown> = {};
	readonly response_metadata: Record<string, unknown> = {};

	constructor(type: 'human' | 'system', content: string) {
		this.type = type;
		this.content = content;
	}

	get text(): string {
		return this.content;
	}

	_getType(): string {
		return this.type;
	}

	getType(): string {
		return this.type;
	}
}

export const shimMessageFactory: MessageFactory = {
	source: 'shim',
	create: (role, text) => new ShimMessage(role === 'system' ? 'system' : 'human', text),
};

export function langchainMessageFactory(module: LangChainMessagesModule): MessageFactory {
	return {
		source: 'langchain',
		create: (role, text) =>
			role === 'system'
				? new module.SystemMessage({ content: text })
				: new module.HumanMessage({ content: text }),
	};
}

const MESSAGES_MODULE = '@langchain/core/messages';

/**
 * Load `@langchain/core/messages` as the host has it. n8n is CommonJS, so the CommonJS build
 * (resolved next to this package, then next to the n8n process) yields the very classes the
 * agent uses; a dynamic import() covers hosts whose build is ESM-only.
 */
export async function importHostMessages(
	ownRequire: (id: string) => unknown = require,
	hostEntry: string | undefined = require.main?.filename ?? process.argv[1],
): Promise<unknown> {
	const resolvers = [ownRequire, ...(hostEntry ? [createRequire(hostEntry)] : [])];
	for (const resolve of resolvers) {
		try {
			return resolve(MESSAGES_MODULE);
		} catch {
			// Not resolvable from here, or ESM-only: try the next way.
		}
	}
	return import(MESSAGES_MODULE);
}

function isMessagesModule(value: unknown): value is LangChainMessagesModule {
	const module = value as Partial<LangChainMessagesModule> | null;
	return typeof module?.HumanMessage === 'function' && typeof module.SystemMessage === 'function';
}

/**
 * Resolve the message factory once per process. `importer` exists so tests can simulate a
 * host without LangChain.
 */
export async function loadMessageFactory(
	importer: () => Promise<unknown> = () => importHostMessages(),
): Promise<MessageFactory> {
	try {
		const module = await importer();
		return isMessagesModule(module) ? langchainMessageFactory(module) : shimMessageFactory;
	} catch {
		return shimMessageFactory;
	}
}
