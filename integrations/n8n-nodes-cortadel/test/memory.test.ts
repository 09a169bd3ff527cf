import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';

import type { IDataObject, IHttpRequestOptions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { DEFAULT_CONTEXT_HEADER, FACT_PREFIX } from '../src/memory/context';
import type { CortadelChatMemory } from '../src/memory/CortadelChatMemory';
import { importHostMessages, loadMessageFactory, ShimMessage } from '../src/memory/messages';
import { CortadelMemory } from '../src/nodes/CortadelMemory/CortadelMemory.node';
import type { HttpHandler } from './helpers/context';
import { httpError, supplyContext } from './helpers/context';

const USER = 'e2e-bob';
const BASE = 'http://cortadel.test:3001';

type Message = { content: unknown; _getType(): string };

function hits(...facts: Array<[string, string]>) {
	return { query: 'q', total: facts.length, results: facts.map(([id, content]) => ({ id, content, rrf_score: 0.01 })) };
}

/** A server stub that records requests and answers searches, lists and writes. */
function stubServer(answer: (options: IHttpRequestOptions) => unknown = () => hits(['m1', 'User drinks oolong tea.'])) {
	const handler: HttpHandler = async (options) => {
		const result = answer(options);
		if (result instanceof Error) throw result;
		return result;
	};
	return handler;
}

async function memoryWith(options: IDataObject = {}, fields: IDataObject = {}, http: HttpHandler = stubServer()) {
	const context = supplyContext({
		parameters: { userId: USER, sessionId: 'chat-1', scopeRecallToSession: false, topK: 5, options, ...fields },
		http,
	});
	const supplied = await new CortadelMemory().supplyData.call(context, 0);
	return { context, memory: supplied.response as CortadelChatMemory };
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3001'), { code: 'ECONNREFUSED' });

describe('Cortadel Memory sub-node', () => {
	it('declares an ai_memory output and no inputs', () => {
		const { description } = new CortadelMemory();
		assert.deepEqual(description.outputs, ['ai_memory']);
		assert.deepEqual(description.inputs, []);
		const defaults = Object.fromEntries(description.properties.map((p) => [p.name, p.default]));
		assert.equal(defaults.userId, '={{ $json.userId ?? $json.sessionId }}');
		assert.equal(defaults.sessionId, '={{ $json.sessionId }}');
		assert.equal(defaults.scopeRecallToSession, false);
		assert.equal(defaults.topK, 5);
	});

	it('supplies a BaseChatMemory-shaped object', async () => {
		const { memory } = await memoryWith();
		assert.deepEqual(memory.memoryKeys, ['chat_history']);
		assert.equal(memory.inputKey, 'input');
		assert.equal(memory.outputKey, 'output');
		assert.equal(memory.returnMessages, true);
		for (const method of ['loadMemoryVariables', 'saveContext', 'clear'] as const) {
			assert.equal(typeof memory[method], 'function');
		}
		for (const method of ['getMessages', 'addMessage', 'addMessages', 'addUserMessage', 'addAIChatMessage', 'clear'] as const) {
			assert.equal(typeof memory.chatHistory[method], 'function');
		}
		assert.deepEqual(await memory.chatHistory.getMessages(), []);
	});

	it('refuses an empty user id', async () => {
		const context = supplyContext({ parameters: { userId: ' ', sessionId: '', options: {} } });
		await assert.rejects(new CortadelMemory().supplyData.call(context, 0), (error: unknown) => {
			assert.ok(error instanceof NodeOperationError);
			assert.equal(error.message, 'User ID is empty');
			return true;
		});
	});

	describe('recall', () => {
		it('searches with the turn input and injects one user-role block', async () => {
			const { context, memory } = await memoryWith();
			const variables = await memory.loadMemoryVariables({ input: 'What do I drink?', system_message: 'Be brief' });
			assert.equal(context.sent.length, 1);
			const { options } = context.sent[0];
			assert.equal(options.method, 'POST');
			assert.equal(options.url, `${BASE}/api/v1/memories/search`);
			assert.deepEqual(options.body, {
				query: 'What do I drink?',
				user_id: USER,
				top_k: 5,
				mode: 'hybrid',
				app_name: 'n8n-nodes-cortadel',
			});
			const history = variables.chat_history as Message[];
			assert.equal(history.length, 1);
			assert.equal(history[0]._getType(), 'human');
			assert.equal(history[0].content, `${DEFAULT_CONTEXT_HEADER}\n- User drinks oolong tea.`);
		});

		it('sends session scope, top K, mode, rerank and memory type when configured', async () => {
			const { context, memory } = await memoryWith(
				{ mode: 'vector', rerank: true, memoryType: 'episodic' },
				{ scopeRecallToSession: true, topK: 12 },
			);
			await memory.loadMemoryVariables({ input: 'deploys' });
			assert.deepEqual(context.sent[0].options.body, {
				query: 'deploys',
				user_id: USER,
				top_k: 12,
				mode: 'vector',
				app_name: 'n8n-nodes-cortadel',
				memory_type: 'episodic',
				session_id: 'chat-1',
				rerank: 'cross_encoder',
			});
		});

		it('does not scope recall to the session by default, nor when there is no session id', async () => {
			const { context, memory } = await memoryWith({}, { scopeRecallToSession: true, sessionId: '' });
			await memory.loadMemoryVariables({ input: 'x' });
			assert.equal((context.sent[0].options.body as IDataObject).session_id, undefined);
		});

		it('formats one message per fact, under the system role when asked', async () => {
			const { memory } = await memoryWith(
				{ contextFormat: 'messages', contextRole: 'system' },
				{},
				stubServer(() => hits(['a', 'User ships on Tuesdays.'], ['b', 'User drinks oolong tea.'])),
			);
			const history = (await memory.loadMemoryVariables({ input: 'q' })).chat_history as Message[];
			assert.deepEqual(
				history.map((m) => [m._getType(), m.content]),
				[
					['system', `${FACT_PREFIX}User ships on Tuesdays.`],
					['system', `${FACT_PREFIX}User drinks oolong tea.`],
				],
			);
		});

		it('uses a custom context header, memory key and input key', async () => {
			const { context, memory } = await memoryWith({
				contextHeader: 'Known facts:',
				memoryKey: 'long_term',
				inputKey: 'question',
			});
			const variables = await memory.loadMemoryVariables({ question: 'tea?', input: 'ignored' });
			assert.deepEqual(memory.memoryKeys, ['long_term']);
			assert.deepEqual(Object.keys(variables), ['long_term']);
			assert.equal((variables.long_term as Message[])[0].content, 'Known facts:\n- User drinks oolong tea.');
			assert.equal((context.sent[0].options.body as IDataObject).query, 'tea?');
		});

		it('returns one rendered string when Return Messages is off', async () => {
			const { memory } = await memoryWith({ returnMessages: false });
			assert.deepEqual(await memory.loadMemoryVariables({ input: 'q' }), {
				chat_history: `${DEFAULT_CONTEXT_HEADER}\n- User drinks oolong tea.`,
			});
			const empty = await memoryWith({ returnMessages: false }, {}, stubServer(() => hits()));
			assert.deepEqual(await empty.memory.loadMemoryVariables({ input: 'q' }), { chat_history: '' });
		});

		it('collapses duplicate hits by id and by text, then keeps top K', async () => {
			const { memory } = await memoryWith(
				{ contextFormat: 'messages' },
				{ topK: 3 },
				stubServer(() =>
					hits(
						['a', 'User likes tea.'],
						['a', 'A different text under a repeated id.'],
						['b', '  user LIKES   tea. '],
						['c', 'User lives in Lisbon.'],
						['d', ''],
						['e', 'User has a cat.'],
						['f', 'User plays chess.'],
					),
				),
			);
			const history = (await memory.loadMemoryVariables({ input: 'q' })).chat_history as Message[];
			assert.deepEqual(
				history.map((m) => m.content),
				[`${FACT_PREFIX}User likes tea.`, `${FACT_PREFIX}User lives in Lisbon.`, `${FACT_PREFIX}User has a cat.`],
			);
		});

		it('injects nothing when nothing is found', async () => {
			const { memory } = await memoryWith({}, {}, stubServer(() => hits()));
			assert.deepEqual(await memory.loadMemoryVariables({ input: 'q' }), { chat_history: [] });
		});

		it('falls back to the newest memories when no input reaches it (streaming branch)', async () => {
			const { context, memory } = await memoryWith(
				{ memoryType: 'semantic' },
				{ topK: 4 },
				stubServer(() => ({
					items: [
						{ id: 'n1', content: 'User moved to Porto.' },
						{ id: 'n2', content: 'User adopted a dog.' },
					],
					total: 2,
					page: 1,
					size: 4,
					pages: 1,
				})),
			);
			const history = (await memory.loadMemoryVariables({})).chat_history as Message[];
			const { options } = context.sent[0];
			assert.equal(options.method, 'GET');
			assert.equal(options.url, `${BASE}/api/v1/memories`);
			assert.deepEqual(options.qs, { user_id: USER, page: 1, size: 4, memory_type: 'semantic' });
			assert.equal(history[0].content, `${DEFAULT_CONTEXT_HEADER}\n- User moved to Porto.\n- User adopted a dog.`);
		});

		it('reads the text of a message object or content blocks as the query', async () => {
			const { context, memory } = await memoryWith({ recallCacheTtlMs: 0 });
			await memory.loadMemoryVariables({ input: { content: '  tea?  ' } });
			await memory.loadMemoryVariables({ input: [{ type: 'text', text: 'coffee?' }, { type: 'image_url' }] });
			assert.deepEqual(
				context.sent.map((call) => (call.options.body as IDataObject).query),
				['tea?', 'coffee?'],
			);
		});

		it('records recall in the execution log', async () => {
			const { context, memory } = await memoryWith();
			await memory.loadMemoryVariables({ input: 'What do I drink?' });
			assert.deepEqual(
				context.log.map((entry) => [entry.kind, entry.connectionType, entry.index]),
				[['input', 'ai_memory', 0], ['output', 'ai_memory', 0]],
			);
			const [[input]] = context.log[0].data as [[{ json: IDataObject }]];
			assert.deepEqual(input.json, { action: 'loadMemoryVariables', values: { input: 'What do I drink?' } });
			const [[output]] = context.log[1].data as [[{ json: IDataObject }]];
			assert.equal(output.json.action, 'loadMemoryVariables');
			assert.equal(output.json.recalled, 1);
		});
	});

	describe('recall cache', () => {
		it('serves an identical recall from the cache and searches again for a new query', async () => {
			const { context, memory } = await memoryWith();
			const first = await memory.loadMemoryVariables({ input: 'tea?' });
			const second = await memory.loadMemoryVariables({ input: 'tea?' });
			assert.equal(context.sent.length, 1);
			assert.deepEqual(second, first);
			await memory.loadMemoryVariables({ input: 'coffee?' });
			assert.equal(context.sent.length, 2);
		});

		it('expires entries after the TTL', async () => {
			const { context, memory } = await memoryWith({ recallCacheTtlMs: 40 });
			await memory.loadMemoryVariables({ input: 'tea?' });
			await memory.loadMemoryVariables({ input: 'tea?' });
			assert.equal(context.sent.length, 1);
			await sleep(80);
			await memory.loadMemoryVariables({ input: 'tea?' });
			assert.equal(context.sent.length, 2);
		});

		it('is disabled by a TTL of 0', async () => {
			const { context, memory } = await memoryWith({ recallCacheTtlMs: 0 });
			await memory.loadMemoryVariables({ input: 'tea?' });
			await memory.loadMemoryVariables({ input: 'tea?' });
			assert.equal(context.sent.length, 2);
		});

		it('does not keep a failed recall', async () => {
			let calls = 0;
			const { context, memory } = await memoryWith({}, {}, stubServer(() => (++calls === 1 ? refused() : hits(['m', 'User is back.']))));
			assert.deepEqual(await memory.loadMemoryVariables({ input: 'q' }), { chat_history: [] });
			const history = (await memory.loadMemoryVariables({ input: 'q' })).chat_history as Message[];
			assert.equal(context.sent.length, 2);
			assert.equal(history[0].content, `${DEFAULT_CONTEXT_HEADER}\n- User is back.`);
		});

		it('clear() drops the cache and deletes nothing on the server', async () => {
			const { context, memory } = await memoryWith();
			await memory.loadMemoryVariables({ input: 'tea?' });
			await memory.clear();
			await memory.chatHistory.clear();
			await memory.loadMemoryVariables({ input: 'tea?' });
			assert.deepEqual(
				context.sent.map((call) => `${call.options.method} ${call.options.url}`),
				[`POST ${BASE}/api/v1/memories/search`, `POST ${BASE}/api/v1/memories/search`],
			);
		});
	});

	describe('persisting turns', () => {
		const ingest = stubServer((options) =>
			options.url.endsWith('/from-conversation')
				? { results: [{ id: 'f1', memory: 'User only ships on Tuesdays.', event: 'ADD', error: null }] }
				: hits(),
		);

		it('posts the finished turn to from-conversation with session, project and tags', async () => {
			const { context, memory } = await memoryWith({ project: 'infra', tags: 'ops, deploys' }, {}, ingest);
			await memory.saveContext(
				{ input: 'I only ship to production on Tuesdays.' },
				{ output: 'Got it, Tuesdays only.' },
			);
			assert.equal(context.sent.length, 1);
			const { options } = context.sent[0];
			assert.equal(options.method, 'POST');
			assert.equal(options.url, `${BASE}/api/v1/memories/from-conversation`);
			assert.deepEqual(options.body, {
				user_id: USER,
				messages: [
					{ role: 'user', content: 'I only ship to production on Tuesdays.' },
					{ role: 'assistant', content: 'Got it, Tuesdays only.' },
				],
				session_id: 'chat-1',
				project: 'infra',
				tags: ['ops', 'deploys'],
			});
			const outputs = context.log.filter((entry) => entry.kind === 'output');
			assert.deepEqual((outputs[0].data as [[{ json: IDataObject }]])[0][0].json, {
				action: 'saveContext',
				events: ['ADD'],
			});
		});

		it('uses custom input and output keys', async () => {
			const { context, memory } = await memoryWith({ inputKey: 'question', outputKey: 'answer' }, {}, ingest);
			await memory.saveContext({ question: 'Q?', input: 'no' }, { answer: 'A.', output: 'no' });
			assert.deepEqual((context.sent[0].options.body as IDataObject).messages, [
				{ role: 'user', content: 'Q?' },
				{ role: 'assistant', content: 'A.' },
			]);
		});

		it('writes nothing when Persist Turns is off, or the turn is empty', async () => {
			const readOnly = await memoryWith({ persistTurns: false }, {}, ingest);
			await readOnly.memory.saveContext({ input: 'hi' }, { output: 'hello' });
			assert.equal(readOnly.context.sent.length, 0);
			const empty = await memoryWith({}, {}, ingest);
			await empty.memory.saveContext({ input: '  ' }, { output: '' });
			assert.equal(empty.context.sent.length, 0);
		});

		it('never writes the same (input, output) pair twice, including A → B → A', async () => {
			const { context, memory } = await memoryWith({}, {}, ingest);
			await memory.saveContext({ input: 'A' }, { output: 'a' });
			await memory.saveContext({ input: 'A' }, { output: 'a' });
			await memory.saveContext({ input: 'B' }, { output: 'b' });
			await memory.saveContext({ input: 'A' }, { output: 'a' });
			await memory.saveContext({ input: 'A' }, { output: 'different answer' });
			assert.deepEqual(
				context.sent.map((call) => (call.options.body as { messages: { content: string }[] }).messages.map((m) => m.content)),
				[['A', 'a'], ['B', 'b'], ['A', 'different answer']],
			);
		});

		it('remembers the last 64 pairs only', async () => {
			const { context, memory } = await memoryWith({}, {}, ingest);
			for (let turn = 0; turn <= 64; turn++) await memory.saveContext({ input: `q${turn}` }, { output: 'ok' });
			assert.equal(context.sent.length, 65);
			await memory.saveContext({ input: 'q64' }, { output: 'ok' });
			assert.equal(context.sent.length, 65, 'a recent pair is still suppressed');
			await memory.saveContext({ input: 'q0' }, { output: 'ok' });
			assert.equal(context.sent.length, 66, 'the 65th-most-recent pair was forgotten');
		});

		it('gives a failed write back, so the same turn can be stored on a later try', async () => {
			let calls = 0;
			const { context, memory } = await memoryWith({}, {}, stubServer(() => (++calls === 1 ? refused() : { no_facts_extracted: true })));
			await memory.saveContext({ input: 'A' }, { output: 'a' });
			await memory.saveContext({ input: 'A' }, { output: 'a' });
			assert.equal(context.sent.length, 2);
			assert.equal(context.warnings.length, 1);
		});

		it('stores tool-using turns the agent saves through chatHistory.addMessages as input + final answer', async () => {
			const { HumanMessage, AIMessage, ToolMessage } = await import('@langchain/core/messages');
			const { context, memory } = await memoryWith({}, {}, ingest);
			await memory.chatHistory.addMessages([
				new HumanMessage('Which day do I deploy?'),
				new AIMessage({ content: '', tool_calls: [{ id: 't1', name: 'search', args: { q: 'deploy' } }] }),
				new ToolMessage({ content: 'User only ships on Tuesdays.', tool_call_id: 't1' }),
				new AIMessage('You deploy on Tuesdays.'),
			]);
			assert.deepEqual((context.sent[0].options.body as IDataObject).messages, [
				{ role: 'user', content: 'Which day do I deploy?' },
				{ role: 'assistant', content: 'You deploy on Tuesdays.' },
			]);
			await memory.saveContext({ input: 'Which day do I deploy?' }, { output: 'You deploy on Tuesdays.' });
			assert.equal(context.sent.length, 1, 'the same turn arriving through saveContext is not stored again');
		});
	});

	describe('degradation', () => {
		it('with the server down, recall yields empty context and logs a warning', async () => {
			const { context, memory } = await memoryWith({}, {}, stubServer(refused));
			assert.deepEqual(await memory.loadMemoryVariables({ input: 'tea?' }), { chat_history: [] });
			assert.deepEqual(context.warnings, [
				'Cortadel recall failed, continuing without memory context: connect ECONNREFUSED 127.0.0.1:3001',
			]);
		});

		it('with the server down, the streaming fallback also yields empty context', async () => {
			const { context, memory } = await memoryWith({ returnMessages: false }, {}, stubServer(refused));
			assert.deepEqual(await memory.loadMemoryVariables({}), { chat_history: '' });
			assert.equal(context.warnings.length, 1);
		});

		it("the warning carries the server's detail from n8n's NodeApiError", async () => {
			const { context, memory } = await memoryWith({}, {}, stubServer(() => httpError(500, { message: 'database is locked' })));
			assert.deepEqual(await memory.loadMemoryVariables({ input: 'tea?' }), { chat_history: [] });
			assert.deepEqual(context.warnings, [
				'Cortadel recall failed, continuing without memory context: The service was not able to process your request (database is locked)',
			]);
		});

		it('a failed write is swallowed with a warning', async () => {
			const { context, memory } = await memoryWith({}, {}, stubServer(refused));
			await memory.saveContext({ input: 'hi' }, { output: 'hello' });
			assert.deepEqual(context.warnings, ['Cortadel could not store this turn: connect ECONNREFUSED 127.0.0.1:3001']);
			const outputs = context.log.filter((entry) => entry.kind === 'output');
			assert.deepEqual((outputs[0].data as [[{ json: IDataObject }]])[0][0].json, {
				action: 'saveContext',
				error: 'connect ECONNREFUSED 127.0.0.1:3001',
			});
		});
	});

	describe('message factory', () => {
		it("uses the host's @langchain/core when it resolves", async () => {
			const factory = await loadMessageFactory();
			const { HumanMessage, SystemMessage } = require('@langchain/core/messages') as typeof import('@langchain/core/messages');
			assert.equal(factory.source, 'langchain');
			assert.ok(factory.create('user', 'x') instanceof HumanMessage);
			assert.ok(factory.create('system', 'x') instanceof SystemMessage);
		});

		it("finds LangChain next to the host process when this package cannot resolve it", async () => {
			const notHere = (id: string) => {
				throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
			};
			const module = await importHostMessages(notHere, __filename);
			assert.equal(module, require('@langchain/core/messages'));
		});

		it('falls back to the shim when LangChain cannot be loaded', async () => {
			const factory = await loadMessageFactory(() => Promise.reject(new Error('Cannot find module')));
			assert.equal(factory.source, 'shim');
			const message = factory.create('system', 'fact');
			assert.ok(message instanceof ShimMessage);
			assert.deepEqual(
				{ ...message },
				{
					type: 'system',
					content: 'fact',
					name: undefined,
					id: undefined,
					additional_kwargs: {},
					response_metadata: {},
				},
			);
			assert.equal(message._getType(), 'system');
			assert.equal(factory.create('user', 'q')._getType(), 'human');
		});
	});
});
