/**
 * The nodes driven through a minimal execution context whose HTTP helper makes real requests
 * to a real Cortadel server, started for this suite on a loopback port.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import type { IDataObject } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { CortadelApi } from '../src/credentials/CortadelApi.credentials';
import { DEFAULT_CONTEXT_HEADER } from '../src/memory/context';
import type { CortadelChatMemory } from '../src/memory/CortadelChatMemory';
import { Cortadel } from '../src/nodes/Cortadel/Cortadel.node';
import { CortadelMemory } from '../src/nodes/CortadelMemory/CortadelMemory.node';
import { executeContext, supplyContext } from './helpers/context';
import type { RunningServer } from './helpers/liveHttp';
import { resolveCredentialExpression } from './helpers/credentials';
import { liveHttp, mintKey, startCortadel } from './helpers/liveHttp';

type Message = { content: unknown; _getType(): string };

const newUser = () => `e2e-live-${randomUUID().slice(0, 8)}`;

async function runAction(credentials: IDataObject, parameters: IDataObject): Promise<IDataObject[]> {
	const context = executeContext({ parameters, credentials, http: liveHttp(credentials) });
	const [rows] = await new Cortadel().execute.call(context);
	return rows.map((row) => row.json);
}

/** One workflow execution's memory instance, as n8n builds it per execution. */
async function memoryFor(credentials: IDataObject, userId: string, sessionId: string, fields: IDataObject = {}) {
	const context = supplyContext({
		parameters: { userId, sessionId, scopeRecallToSession: false, topK: 5, options: {}, ...fields },
		credentials,
		http: liveHttp(credentials),
	});
	const { response } = await new CortadelMemory().supplyData.call(context, 0);
	return { context, memory: response as CortadelChatMemory };
}

async function recalledLines(memory: CortadelChatMemory, input: string): Promise<string[]> {
	const history = (await memory.loadMemoryVariables({ input })).chat_history as Message[];
	if (history.length === 0) return [];
	const [header, ...facts] = String(history[0].content).split('\n');
	assert.equal(header, DEFAULT_CONTEXT_HEADER);
	assert.equal(history[0]._getType(), 'human');
	return facts;
}

describe('live: nodes against a real Cortadel server', () => {
	let server: RunningServer;
	let credentials: IDataObject;

	before(async () => {
		server = await startCortadel();
		credentials = { baseUrl: `${server.baseUrl}/`, apiKey: '' };
	});
	after(async () => server?.stop());

	it("the credential's test request succeeds against a healthy server", async () => {
		const { request } = new CortadelApi().test;
		const baseUrl = resolveCredentialExpression(String(request.baseURL), credentials);
		assert.equal(baseUrl, server.baseUrl);
		const response = await fetch(`${baseUrl}${request.url}`, { method: request.method });
		assert.equal(response.status, 200);
		assert.equal(((await response.json()) as { status: string }).status, 'ok');
	});

	it('action node: add, get, search, list, delete, then get is a 404 node error', async () => {
		const userId = newUser();
		const text = 'The staging database is called heron-7.';
		const [created] = await runAction(credentials, {
			operation: 'add',
			userId,
			text,
			options: { infer: false, metadata: '{"source":"live-test"}' },
		});
		assert.equal(created.event, 'ADD');
		assert.equal(created.app_name, 'n8n-nodes-cortadel');
		const id = created.id as string;

		const [detail] = await runAction(credentials, { operation: 'get', userId, memoryId: id });
		assert.equal(detail.text, text);
		assert.equal(detail.is_current, true);
		const createdAt = Number(detail.created_at);
		assert.ok(Math.abs(createdAt - Date.now() / 1000) < 120, `created_at ${createdAt} is not recent`);

		const found = await runAction(credentials, {
			operation: 'search',
			userId,
			query: 'staging database heron',
			options: { topK: 5, mode: 'hybrid' },
		});
		assert.deepEqual(found.map((hit) => [hit.id, hit.content]), [[id, text]]);

		const listed = await runAction(credentials, { operation: 'list', userId, returnAll: true, options: {} });
		assert.deepEqual(listed.map((item) => item.id), [id]);

		const [deleted] = await runAction(credentials, { operation: 'delete', userId, memoryIds: id });
		assert.match(deleted.message as string, /1/);

		await assert.rejects(runAction(credentials, { operation: 'get', userId, memoryId: id }), (error: unknown) => {
			assert.ok(error instanceof NodeApiError);
			assert.equal(error.httpCode, '404');
			assert.equal(error.message, `Memory ${id} not found for user ${userId}`);
			return true;
		});
		const afterDelete = await runAction(credentials, { operation: 'search', userId, query: 'staging database heron', options: {} });
		assert.deepEqual(afterDelete, []);
	});

	it('action node: List pages through more than one page with Return All', async () => {
		const userId = newUser();
		const texts = ['Fact alpha is red.', 'Fact beta is green.', 'Fact gamma is blue.'];
		for (const text of texts) await runAction(credentials, { operation: 'add', userId, text, options: { infer: false } });
		const onePage = await runAction(credentials, { operation: 'list', userId, returnAll: false, limit: 2, options: {} });
		assert.equal(onePage.length, 2);
		const all = await runAction(credentials, { operation: 'list', userId, returnAll: true, options: {} });
		assert.deepEqual(all.map((item) => item.content).sort(), [...texts].sort());
	});

	it('memory: a fact stored by the action node is recalled by the memory in a later session', async () => {
		const userId = newUser();
		await runAction(credentials, {
			operation: 'add',
			userId,
			text: 'I only ship to production on Tuesdays.',
			options: { infer: false },
		});
		const { context, memory } = await memoryFor(credentials, userId, 'session-later');
		assert.deepEqual(await recalledLines(memory, 'Which day do I ship to production?'), [
			'- I only ship to production on Tuesdays.',
		]);
		assert.deepEqual(context.warnings, []);
	});

	it('memory: remembered in one session (from-conversation), recalled in another', async () => {
		const userId = newUser();
		const first = await memoryFor(credentials, userId, 'session-a');
		await first.memory.saveContext(
			{ input: 'I only ship to production on Tuesdays.' },
			{ output: 'Understood, production deploys happen on Tuesdays.' },
		);
		assert.deepEqual(first.context.warnings, []);
		const saved = first.context.log.filter((entry) => entry.kind === 'output');
		const events = (saved[0].data as [[{ json: IDataObject }]])[0][0].json.events as string[];
		assert.ok(events.includes('ADD'), `events were ${JSON.stringify(events)}`);

		const second = await memoryFor(credentials, userId, 'session-b');
		const lines = await recalledLines(second.memory, 'Which day do I ship to production?');
		assert.equal(lines[0], '- User only ships to production on Tuesdays.');
		assert.deepEqual(second.context.warnings, []);

		const scopedElsewhere = await memoryFor(credentials, userId, 'session-b', { scopeRecallToSession: true });
		assert.deepEqual(await recalledLines(scopedElsewhere.memory, 'Which day do I ship to production?'), []);
		const scopedHere = await memoryFor(credentials, userId, 'session-a', { scopeRecallToSession: true });
		assert.equal(
			(await recalledLines(scopedHere.memory, 'Which day do I ship to production?'))[0],
			'- User only ships to production on Tuesdays.',
		);
	});

	it('memory: with no input (streaming branch) the newest memories are injected', async () => {
		const userId = newUser();
		for (const text of ['Older fact: likes jazz.', 'Newer fact: learning Rust.']) {
			await runAction(credentials, { operation: 'add', userId, text, options: { infer: false } });
		}
		const { memory } = await memoryFor(credentials, userId, 's', { topK: 1 });
		const history = (await memory.loadMemoryVariables({})).chat_history as Message[];
		assert.equal(history[0].content, `${DEFAULT_CONTEXT_HEADER}\n- Newer fact: learning Rust.`);
	});

	it('memory: an unreachable server degrades to empty context and a warning', async () => {
		const down = { baseUrl: 'http://127.0.0.1:9', apiKey: '' };
		const { context, memory } = await memoryFor(down, newUser(), 's');
		assert.deepEqual(await memory.loadMemoryVariables({ input: 'anything?' }), { chat_history: [] });
		await memory.saveContext({ input: 'hi' }, { output: 'hello' });
		assert.equal(context.warnings.length, 2);
		assert.match(context.warnings[0], /^Cortadel recall failed, continuing without memory context: /);
		assert.match(context.warnings[1], /^Cortadel could not store this turn: /);
	});
});

describe('live: API key authentication', () => {
	const env = { CORTADEL_AUTH_SECRET: 's3cret-live' };
	const userId = 'e2e-live-keyholder';
	let server: RunningServer;

	before(async () => {
		server = await startCortadel(env);
	});
	after(async () => server?.stop());

	it('a minted key is sent as a Bearer token and accepted', async () => {
		const credentials = { baseUrl: server.baseUrl, apiKey: mintKey(userId, env) };
		const [created] = await runAction(credentials, {
			operation: 'add',
			userId,
			text: 'Prefers window seats.',
			options: { infer: false },
		});
		assert.equal(created.event, 'ADD');
		const { memory, context } = await memoryFor(credentials, userId, 's');
		assert.deepEqual(await recalledLines(memory, 'window seats'), ['- Prefers window seats.']);
		assert.deepEqual(context.warnings, []);
	});

	it('without a key the action node fails with 401 and the memory degrades', async () => {
		const credentials = { baseUrl: server.baseUrl, apiKey: '' };
		await assert.rejects(
			runAction(credentials, { operation: 'search', userId, query: 'seats', options: {} }),
			(error: unknown) => {
				assert.ok(error instanceof NodeApiError);
				assert.equal(error.httpCode, '401');
				return true;
			},
		);
		const { memory, context } = await memoryFor(credentials, userId, 's');
		assert.deepEqual(await memory.loadMemoryVariables({ input: 'seats' }), { chat_history: [] });
		assert.equal(context.warnings.length, 1);
	});

	it("a key for another user is refused (403)", async () => {
		const credentials = { baseUrl: server.baseUrl, apiKey: mintKey('e2e-live-someone-else', env) };
		await assert.rejects(
			runAction(credentials, { operation: 'list', userId, returnAll: false, options: {} }),
			(error: unknown) => error instanceof NodeApiError && error.httpCode === '403',
		);
	});
});
