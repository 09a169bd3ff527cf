import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { Cortadel } from '../src/nodes/Cortadel/Cortadel.node';
import { executeContext, httpError, replies } from './helpers/context';

const BASE = 'http://cortadel.test:3001';
const USER = 'e2e-alice';

async function run(parameters: Record<string, unknown> | Record<string, unknown>[], answers: unknown[], extra = {}) {
	const context = executeContext({
		parameters: parameters as never,
		http: replies(...answers),
		...extra,
	});
	const output = await new Cortadel().execute.call(context);
	return { context, rows: (output as { json: unknown; pairedItem: unknown }[][])[0] };
}

describe('Cortadel action node', () => {
	it('is offered to the AI Agent as a tool and authenticates with the Cortadel API credential', () => {
		const { description } = new Cortadel();
		assert.equal(description.usableAsTool, true);
		assert.deepEqual(description.credentials, [{ name: 'cortadelApi', required: true }]);
		const operation = description.properties.find((p) => p.name === 'operation');
		assert.deepEqual(
			operation?.options?.map((o) => ('value' in o ? o.value : undefined)).sort(),
			['add', 'addConversation', 'delete', 'get', 'list', 'search'],
		);
	});

	describe('Add', () => {
		it('posts the text with the package name as app by default', async () => {
			const created = { id: 'm1', content: 'Likes tea', event: 'ADD', state: 'active' };
			const { context, rows } = await run(
				{ operation: 'add', userId: USER, text: 'Likes tea', options: {} },
				[created],
			);
			assert.equal(context.sent.length, 1);
			const { credentialType, options } = context.sent[0];
			assert.equal(credentialType, 'cortadelApi');
			assert.equal(options.method, 'POST');
			assert.equal(options.url, `${BASE}/api/v1/memories`);
			assert.deepEqual(options.body, { user_id: USER, text: 'Likes tea', app: 'n8n-nodes-cortadel' });
			assert.equal(options.qs, undefined);
			assert.equal(options.json, true);
			assert.deepEqual(rows, [{ json: created, pairedItem: { item: 0 } }]);
		});

		it('sends every option: app override, infer, memory type and parsed metadata', async () => {
			const { context } = await run(
				{
					operation: 'add',
					userId: USER,
					text: 'Deploys on Tuesdays',
					options: { app: 'ops-bot', infer: false, memoryType: 'procedural', metadata: '{"team":"infra","n":2}' },
				},
				[{ id: 'm2', event: 'ADD' }],
			);
			assert.deepEqual(context.sent[0].options.body, {
				user_id: USER,
				text: 'Deploys on Tuesdays',
				app: 'ops-bot',
				infer: false,
				memory_type: 'procedural',
				metadata: { team: 'infra', n: 2 },
			});
		});

		it('rejects metadata that is not a JSON object without calling the server', async () => {
			const context = executeContext({
				parameters: { operation: 'add', userId: USER, text: 'x', options: { metadata: '[1,2]' } },
			});
			await assert.rejects(new Cortadel().execute.call(context), (error: unknown) => {
				assert.ok(error instanceof NodeOperationError);
				assert.equal(error.message, 'Metadata must be a JSON object');
				return true;
			});
			assert.equal(context.sent.length, 0);
		});
	});

	describe('Add Conversation', () => {
		it('posts the transcript with every option and returns one row per extracted fact', async () => {
			const results = [
				{ id: 'f1', memory: 'User ships on Tuesdays.', event: 'ADD', error: null },
				{ id: 'f0', memory: 'User likes tea.', event: 'SKIP_DUPLICATE', error: null },
			];
			const { context, rows } = await run(
				{
					operation: 'addConversation',
					userId: USER,
					messages: {
						message: [
							{ role: 'user', content: 'I only ship to production on Tuesdays.' },
							{ role: 'assistant', content: '  ' },
							{ role: 'assistant', content: 'Noted.' },
						],
					},
					options: { sessionId: 'chat-7', project: 'infra', tags: 'ops, deploys,', isAgentMemory: true },
				},
				[{ results }],
			);
			const { options } = context.sent[0];
			assert.equal(options.method, 'POST');
			assert.equal(options.url, `${BASE}/api/v1/memories/from-conversation`);
			assert.deepEqual(options.body, {
				user_id: USER,
				messages: [
					{ role: 'user', content: 'I only ship to production on Tuesdays.' },
					{ role: 'assistant', content: 'Noted.' },
				],
				session_id: 'chat-7',
				project: 'infra',
				tags: ['ops', 'deploys'],
				is_agent_memory: true,
			});
			assert.deepEqual(
				rows.map((row) => row.json),
				results,
			);
		});

		it('omits unset options and reports a conversation with nothing to extract', async () => {
			const { context, rows } = await run(
				{ operation: 'addConversation', userId: USER, messages: { message: [{ role: 'user', content: 'hi' }] }, options: {} },
				[{ no_facts_extracted: true }],
			);
			assert.deepEqual(context.sent[0].options.body, {
				user_id: USER,
				messages: [{ role: 'user', content: 'hi' }],
			});
			assert.deepEqual(rows, [{ json: { no_facts_extracted: true }, pairedItem: { item: 0 } }]);
		});
	});

	describe('Search', () => {
		it('defaults to ten results and labels the search with the package name', async () => {
			const hit = { id: 'm1', content: 'Likes tea', rrf_score: 0.03 };
			const { context, rows } = await run(
				{ operation: 'search', userId: USER, query: 'drinks', options: {} },
				[{ query: 'drinks', total: 1, results: [hit] }],
			);
			const { options } = context.sent[0];
			assert.equal(options.method, 'POST');
			assert.equal(options.url, `${BASE}/api/v1/memories/search`);
			assert.deepEqual(options.body, {
				query: 'drinks',
				user_id: USER,
				top_k: 10,
				app_name: 'n8n-nodes-cortadel',
			});
			assert.deepEqual(rows, [{ json: hit, pairedItem: { item: 0 } }]);
		});

		it('sends top K, mode, session, rerank and memory type', async () => {
			const { context } = await run(
				{
					operation: 'search',
					userId: USER,
					query: 'deploy day',
					options: { topK: 3, mode: 'text', sessionId: 's-1', rerank: true, memoryType: 'episodic' },
				},
				[{ query: 'deploy day', total: 0, results: [] }],
			);
			assert.deepEqual(context.sent[0].options.body, {
				query: 'deploy day',
				user_id: USER,
				top_k: 3,
				mode: 'text',
				app_name: 'n8n-nodes-cortadel',
				session_id: 's-1',
				rerank: 'cross_encoder',
				memory_type: 'episodic',
			});
		});
	});

	describe('List', () => {
		const page = (items: unknown[], pageNumber: number, pages: number) => ({
			items,
			total: 250,
			page: pageNumber,
			size: 100,
			pages,
		});

		it('fetches one page of the requested size with every filter in the query string', async () => {
			const { context, rows } = await run(
				{
					operation: 'list',
					userId: USER,
					returnAll: false,
					limit: 7,
					options: {
						page: 3,
						appId: 'app-1',
						categories: 'work,travel',
						searchQuery: 'tea',
						includeSuperseded: true,
						memoryType: 'semantic',
					},
				},
				[page([{ id: 'a', content: 'A' }], 3, 4)],
			);
			const { options } = context.sent[0];
			assert.equal(options.method, 'GET');
			assert.equal(options.url, `${BASE}/api/v1/memories`);
			assert.equal(options.body, undefined);
			assert.deepEqual(options.qs, {
				user_id: USER,
				page: 3,
				size: 7,
				app_id: 'app-1',
				categories: 'work,travel',
				search_query: 'tea',
				include_superseded: 'true',
				memory_type: 'semantic',
			});
			assert.deepEqual(rows.map((row) => row.json), [{ id: 'a', content: 'A' }]);
		});

		it('defaults to page 1 and a limit of 50', async () => {
			const { context } = await run(
				{ operation: 'list', userId: USER, returnAll: false, options: {} },
				[page([], 1, 0)],
			);
			assert.deepEqual(context.sent[0].options.qs, { user_id: USER, page: 1, size: 50 });
		});

		it('with Return All walks every page in pages of 100 until the last one', async () => {
			const { context, rows } = await run(
				{ operation: 'list', userId: USER, returnAll: true, options: {} },
				[page([{ id: '1' }, { id: '2' }], 1, 3), page([{ id: '3' }], 2, 3), page([{ id: '4' }], 3, 3)],
			);
			assert.deepEqual(
				context.sent.map((call) => [call.options.qs?.page, call.options.qs?.size]),
				[[1, 100], [2, 100], [3, 100]],
			);
			assert.deepEqual(rows.map((row) => (row.json as { id: string }).id), ['1', '2', '3', '4']);
		});

		it('with Return All stops at an empty page even if the server reports more pages', async () => {
			const { context, rows } = await run(
				{ operation: 'list', userId: USER, returnAll: true, options: { page: 2 } },
				[page([{ id: 'x' }], 2, 9), page([], 3, 9)],
			);
			assert.deepEqual(context.sent.map((call) => call.options.qs?.page), [2, 3]);
			assert.equal(rows.length, 1);
		});
	});

	describe('Get', () => {
		it('fetches one memory by id with the user in the query string', async () => {
			const detail = { id: 'a b/c', text: 'Likes tea', is_current: true, valid_at: null, invalid_at: null };
			const { context, rows } = await run({ operation: 'get', userId: USER, memoryId: ' a b/c ' }, [detail]);
			const { options } = context.sent[0];
			assert.equal(options.method, 'GET');
			assert.equal(options.url, `${BASE}/api/v1/memories/a%20b%2Fc`);
			assert.deepEqual(options.qs, { user_id: USER });
			assert.deepEqual(rows, [{ json: detail, pairedItem: { item: 0 } }]);
		});

		it('turns a 404 into a node error', async () => {
			const context = executeContext({
				parameters: { operation: 'get', userId: USER, memoryId: 'missing' },
				http: replies(httpError(404, { status: 404, code: 'not_found', message: 'Memory not found' })),
			});
			await assert.rejects(new Cortadel().execute.call(context), (error: unknown) => {
				assert.ok(error instanceof NodeApiError);
				assert.equal(error.httpCode, '404');
				assert.equal(error.message, `Memory missing not found for user ${USER}`);
				return true;
			});
		});

		it('with Continue On Fail returns the 404 as a data row instead', async () => {
			const { rows } = await run(
				{ operation: 'get', userId: USER, memoryId: 'missing' },
				[httpError(404)],
				{ continueOnFail: true },
			);
			assert.deepEqual(rows, [
				{ json: { error: `Memory missing not found for user ${USER}` }, pairedItem: { item: 0 } },
			]);
		});
	});

	describe('Delete', () => {
		it('sends the ids in a JSON body', async () => {
			const { context, rows } = await run(
				{ operation: 'delete', userId: USER, memoryIds: 'm1, m2 ,,m3' },
				[{ message: 'Deleted 3 memories' }],
			);
			const { options } = context.sent[0];
			assert.equal(options.method, 'DELETE');
			assert.equal(options.url, `${BASE}/api/v1/memories`);
			assert.deepEqual(options.body, { user_id: USER, memory_ids: ['m1', 'm2', 'm3'] });
			assert.deepEqual(rows, [
				{ json: { message: 'Deleted 3 memories', memory_ids: ['m1', 'm2', 'm3'] }, pairedItem: { item: 0 } },
			]);
		});
	});

	it('runs each input item with its own parameters and pairs the output', async () => {
		const { context, rows } = await run(
			[
				{ operation: 'add', userId: 'e2e-a', text: 'one', options: {} },
				{ operation: 'add', userId: 'e2e-b', text: 'two', options: {} },
			],
			[{ id: '1' }, { id: '2' }],
		);
		assert.deepEqual(context.sent.map((call) => (call.options.body as { user_id: string }).user_id), ['e2e-a', 'e2e-b']);
		assert.deepEqual(rows.map((row) => row.pairedItem), [{ item: 0 }, { item: 1 }]);
	});

	it('refuses an empty user id before calling the server', async () => {
		const context = executeContext({ parameters: { operation: 'search', userId: '  ', query: 'q', options: {} } });
		await assert.rejects(new Cortadel().execute.call(context), /User ID is empty/);
		assert.equal(context.sent.length, 0);
	});

	it('reads a user id an expression made a number as its text, and an object as no user id', async () => {
		const { context } = await run({ operation: 'delete', userId: 42, memoryIds: 'm1' }, [{ message: 'Deleted 1 memory' }]);
		assert.deepEqual(context.sent[0].options.body, { user_id: '42', memory_ids: ['m1'] });
		const objectId = executeContext({ parameters: { operation: 'search', userId: { id: 7 }, query: 'q', options: {} } });
		await assert.rejects(new Cortadel().execute.call(objectId), /User ID is empty/);
		assert.equal(objectId.sent.length, 0);
	});

	it('wraps transport failures in a node API error', async () => {
		const context = executeContext({
			parameters: { operation: 'search', userId: USER, query: 'q', options: {} },
			http: replies(httpError(500, { message: 'boom' })),
		});
		await assert.rejects(new Cortadel().execute.call(context), (error: unknown) => {
			assert.ok(error instanceof NodeApiError);
			assert.equal(error.httpCode, '500');
			return true;
		});
	});
});
