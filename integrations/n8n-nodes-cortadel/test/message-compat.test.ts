/**
 * Recalled context must survive the real LangChain pipeline n8n's AI Agent runs: prompt
 * formatting (message coercion) and the provider's message converter. These tests run the
 * real @langchain/core, @langchain/openai and @langchain/anthropic code, offline.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';

import type { ContextFormat } from '../src/memory/context';
import { DEFAULT_CONTEXT_HEADER, FACT_PREFIX } from '../src/memory/context';
import { CortadelChatMemory, DEFAULT_MEMORY_SETTINGS } from '../src/memory/CortadelChatMemory';
import type { ContextRole, MessageFactory } from '../src/memory/messages';
import { loadMessageFactory, shimMessageFactory } from '../src/memory/messages';
import type { Transport } from '../src/shared/transport';

type AnyMessage = { content: unknown; _getType(): string };
type Converter = (messages: AnyMessage[]) => unknown;

interface Toolchain {
	core: typeof import('@langchain/core/messages');
	prompts: typeof import('@langchain/core/prompts');
	toOpenAICompletions: Converter;
	toOpenAIResponses: Converter;
	toAnthropic: (messages: AnyMessage[]) => { system?: unknown; messages: { role: string; content: unknown }[] };
}

/** Loaded with require() so a host without the dev dependencies skips the suite instead of failing. */
function loadToolchain(): Toolchain | undefined {
	try {
		const openai = require('@langchain/openai') as typeof import('@langchain/openai');
		// The Anthropic converter is internal; load it from the installed package's dist.
		const anthropicDist = dirname(require.resolve('@langchain/anthropic'));
		const anthropic = require(join(anthropicDist, 'utils', 'message_inputs.cjs')) as {
			_convertMessagesToAnthropicPayload: Toolchain['toAnthropic'];
		};
		return {
			core: require('@langchain/core/messages') as Toolchain['core'],
			prompts: require('@langchain/core/prompts') as Toolchain['prompts'],
			toOpenAICompletions: (messages) =>
				openai.convertMessagesToCompletionsMessageParams({ messages: messages as never, model: 'gpt-4o-mini' }),
			toOpenAIResponses: (messages) =>
				openai.convertMessagesToResponsesInput({ messages: messages as never, model: 'gpt-4o-mini', zdrEnabled: false }),
			toAnthropic: anthropic._convertMessagesToAnthropicPayload,
		};
	} catch {
		return undefined;
	}
}

const toolchain = loadToolchain();

const FACTS = ['User only ships to production on Tuesdays.', 'User drinks oolong tea.'];
const INPUT = 'When can I deploy?';
const AGENT_SYSTEM = 'You are a helpful assistant.';

const searchStub: Transport = async <T>() =>
	({ query: INPUT, total: FACTS.length, results: FACTS.map((content, i) => ({ id: `m${i}`, content, rrf_score: 0.02 })) }) as T;

async function recall(factory: MessageFactory, role: ContextRole, format: ContextFormat): Promise<AnyMessage[]> {
	const memory = new CortadelChatMemory(
		{ ...DEFAULT_MEMORY_SETTINGS, userId: 'e2e-compat', contextRole: role, contextFormat: format },
		searchStub,
		factory,
		{ warn: () => undefined, logAction: () => () => undefined },
	);
	return (await memory.loadMemoryVariables({ input: INPUT })).chat_history as AnyMessage[];
}

/** The agent's prompt, shaped as n8n's Tools Agent builds it: [system?, ...chat_history, human]. */
async function agentPrompt(chain: Toolchain, history: AnyMessage[], withSystemMessage: boolean): Promise<AnyMessage[]> {
	const template = chain.prompts.ChatPromptTemplate.fromMessages([
		...(withSystemMessage ? [['system', '{system_message}'] as ['system', string]] : []),
		['placeholder', '{chat_history}'],
		['human', '{input}'],
		['placeholder', '{agent_scratchpad}'],
	]);
	return template.formatMessages({
		system_message: AGENT_SYSTEM,
		chat_history: history,
		input: INPUT,
		agent_scratchpad: [],
	});
}

const expectedContext = (format: ContextFormat): string[] =>
	format === 'block'
		? [[DEFAULT_CONTEXT_HEADER, ...FACTS.map((fact) => `- ${fact}`)].join('\n')]
		: FACTS.map((fact) => `${FACT_PREFIX}${fact}`);

describe('message compatibility with real LangChain', { skip: toolchain ? false : 'LangChain dev dependencies are not installed' }, () => {
	const chain = toolchain as Toolchain;
	const factories: Array<[string, () => Promise<MessageFactory>]> = [
		['LangChain messages', () => loadMessageFactory()],
		// A host whose @langchain/core only loads through import() gets the ESM build's classes.
		['LangChain ESM-build messages', () => loadMessageFactory(() => import('@langchain/core/messages'))],
		['shim messages', async () => shimMessageFactory],
	];

	it('the real factory is in use when @langchain/core is installed', async () => {
		assert.equal((await loadMessageFactory()).source, 'langchain');
	});

	it('coercion hands a shim message through untouched, so it must carry every field itself', async () => {
		const [shim] = await recall(shimMessageFactory, 'user', 'block');
		assert.equal(chain.core.coerceMessageLikeToMessage(shim as never), shim);
	});

	for (const [label, factoryOf] of factories) {
		for (const format of ['block', 'messages'] as ContextFormat[]) {
			describe(`${label}, ${format} format`, () => {
				for (const withSystemMessage of [true, false]) {
					const prompt = withSystemMessage ? 'with an agent system message' : 'without an agent system message';

					it(`user role converts for OpenAI completions and responses, ${prompt}`, async () => {
						const messages = await agentPrompt(chain, await recall(await factoryOf(), 'user', format), withSystemMessage);
						const expected = [
							...(withSystemMessage ? [{ role: 'system', content: AGENT_SYSTEM }] : []),
							...expectedContext(format).map((content) => ({ role: 'user', content })),
							{ role: 'user', content: INPUT },
						];
						assert.deepEqual(chain.toOpenAICompletions(messages), expected);
						assert.deepEqual(
							(chain.toOpenAIResponses(messages) as { role: string; content: unknown }[]).map(({ role, content }) => ({ role, content })),
							expected,
						);
					});

					it(`user role converts for Anthropic, ${prompt}`, async () => {
						const messages = await agentPrompt(chain, await recall(await factoryOf(), 'user', format), withSystemMessage);
						const payload = chain.toAnthropic(messages);
						assert.equal(payload.system, withSystemMessage ? AGENT_SYSTEM : undefined);
						assert.deepEqual(payload.messages, [
							...expectedContext(format).map((content) => ({ role: 'user', content })),
							{ role: 'user', content: INPUT },
						]);
					});

					it(`system role converts for OpenAI, ${prompt}`, async () => {
						const messages = await agentPrompt(chain, await recall(await factoryOf(), 'system', format), withSystemMessage);
						assert.deepEqual(chain.toOpenAICompletions(messages), [
							...(withSystemMessage ? [{ role: 'system', content: AGENT_SYSTEM }] : []),
							...expectedContext(format).map((content) => ({ role: 'system', content })),
							{ role: 'user', content: INPUT },
						]);
					});

					// Anthropic lifts only messages[0] into its system field; any later system message throws.
					const anthropicRejects = withSystemMessage || format === 'messages';
					it(`system role ${anthropicRejects ? 'throws' : 'converts'} on Anthropic, ${prompt}`, async () => {
						const messages = await agentPrompt(chain, await recall(await factoryOf(), 'system', format), withSystemMessage);
						if (anthropicRejects) {
							assert.throws(() => chain.toAnthropic(messages), {
								message: 'System messages are only permitted as the first passed message.',
							});
						} else {
							const payload = chain.toAnthropic(messages);
							assert.equal(payload.system, expectedContext(format)[0]);
							assert.deepEqual(payload.messages, [{ role: 'user', content: INPUT }]);
						}
					});
				}
			});
		}
	}
});
