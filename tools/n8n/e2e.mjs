// `make e2e-n8n`: n8n-nodes-cortadel inside a real n8n (the pinned one in this folder).
//
// Packs the package, installs the tarball into a throwaway n8n user folder the way a user does
// (`npm install <tarball>` in ~/.n8n/nodes), starts n8n headless on loopback next to a real
// Cortadel server and the scripted OpenAI-compatible chat server of the Python tests, then checks
// through n8n's own REST API, Cortadel's REST API and the model's request log:
//   1. n8n loaded both nodes (and the tool variant of the action node) and the credential, serves
//      their icons, and the credential's test passes;
//   2-3. the example agent workflow, run as two separate chat executions, stores the fact told in
//        the first and recalls it into the model's prompt in the second; a third has the model call
//        the Save Memory tool;
//   4. the Cortadel action node's add, search, list, get and delete return what the server holds.
// Run with the Node 22 of tools/node22 (n8n 1.123 supports Node 20.19-24): `make e2e-n8n`.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServer } from '../test-server.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '..', '..');
const PACKAGE_DIR = join(REPO, 'integrations', 'n8n-nodes-cortadel');
const N8N_BIN = join(HERE, 'node_modules', 'n8n', 'bin', 'n8n');
const PYTHON = process.env.CORTADEL_PYTHON ?? join(REPO, '.venv', 'bin', 'python');
const EXAMPLE = join(PACKAGE_DIR, 'examples', 'agent-with-cortadel-memory.json');

const MODEL_ANSWER = 'Noted, I will keep that in mind.';
// The memory node's default context header (src/memory/CortadelChatMemory.ts).
const RECALL_HEADER =
	'Background from long-term memory (facts saved in earlier conversations, not part of the current message). Use them where they help:';
const FACT_TOLD = 'I only ship to production on Tuesdays.';
const FACT_STORED = 'User only ships to production on Tuesdays.';
const OWNER = { email: 'e2e-owner@example.com', firstName: 'E2E', lastName: 'Owner', password: 'E2e-owner-password-1' };
const STARTUP_MS = 180_000;

const started = Date.now();
const log = (message) => console.log(`[e2e-n8n +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);

/** A loopback port with no listener right now; n8n cannot bind port 0 and report what it got. */
async function freePort() {
	const server = createServer();
	await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
	const { port } = server.address();
	await new Promise((ok) => server.close(ok));
	return port;
}

async function waitFor(what, deadlineMs, probe) {
	const deadline = Date.now() + deadlineMs;
	for (;;) {
		const value = await probe().catch(() => undefined);
		if (value !== undefined) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((ok) => setTimeout(ok, 250));
	}
}

/** A child process whose output goes to a file (shown when the run fails), stopped with SIGTERM. */
function startProcess(name, command, args, { env, logDir }) {
	const logFile = join(logDir, `${name}.log`);
	const out = createWriteStream(logFile);
	const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
	child.stdout.pipe(out);
	child.stderr.pipe(out);
	let exitCode = null;
	child.on('exit', (code, signal) => { exitCode = code ?? signal; });
	return {
		logFile,
		get exitCode() { return exitCode; },
		async stop() {
			if (exitCode !== null) return;
			const exited = new Promise((ok) => child.once('exit', ok));
			child.kill('SIGTERM');
			const killed = await Promise.race([exited.then(() => true), new Promise((ok) => setTimeout(() => ok(false), 15_000))]);
			if (!killed) child.kill('SIGKILL');
		},
	};
}

async function startScriptedModel(logDir) {
	const portFile = join(logDir, 'scripted-llm.port');
	const proc = startProcess('scripted-llm', PYTHON, [join(HERE, 'scripted_llm.py'), portFile, MODEL_ANSWER], { logDir });
	const port = await waitFor('the scripted model', 30_000, async () => {
		if (proc.exitCode !== null) throw new Error(`scripted_llm.py exited with ${proc.exitCode}`);
		return existsSync(portFile) ? Number(readFileSync(portFile, 'utf8')) : undefined;
	});
	const baseUrl = `http://127.0.0.1:${port}`;
	return {
		v1Url: `${baseUrl}/v1`,
		/** Every request the model received, in order (method, path, decoded JSON body). */
		async requests() {
			return (await (await fetch(`${baseUrl}/requests`)).json()).filter((r) => r.path === '/v1/chat/completions');
		},
		/** Queue completions that call tools, served before the default answer. */
		async script(replies) {
			const response = await fetch(`${baseUrl}/script`, { method: 'POST', body: JSON.stringify(replies) });
			assert.deepEqual(await response.json(), { queued: replies.length });
		},
		stop: () => proc.stop(),
	};
}

/** Build and pack the package, then install the tarball in the user folder's nodes directory. */
function installPackage(workDir, userFolder) {
	execFileSync('npm', ['run', 'build', '--silent', '-w', 'integrations/n8n-nodes-cortadel'], { cwd: REPO, stdio: 'inherit' });
	const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', workDir], { cwd: PACKAGE_DIR, encoding: 'utf8' }).trim();
	const nodesDir = join(userFolder, '.n8n', 'nodes');
	mkdirSync(nodesDir, { recursive: true });
	writeFileSync(join(nodesDir, 'package.json'), JSON.stringify({ name: 'installed-nodes', private: true }));
	execFileSync('npm', ['install', '--no-audit', '--no-fund', join(workDir, tarball)], { cwd: nodesDir, stdio: 'inherit' });
	const installed = readdirSync(join(nodesDir, 'node_modules')).filter((name) => !name.startsWith('.'));
	// Nothing but our package: n8n-workflow must come from the host, not from a peer install.
	assert.deepEqual(installed, ['n8n-nodes-cortadel'], `~/.n8n/nodes holds ${installed.join(', ')}`);
	return tarball;
}

/** n8n's REST API as the instance owner (the session cookie from owner setup). */
function n8nClient(baseUrl) {
	let cookie = '';
	async function call(method, path, body) {
		const response = await fetch(`${baseUrl}${path}`, {
			method,
			headers: { 'content-type': 'application/json', cookie },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await response.text();
		if (!response.ok) throw new Error(`${method} ${path} -> ${response.status}: ${text.slice(0, 500)}`);
		const setCookie = response.headers.get('set-cookie');
		if (setCookie) cookie = setCookie.split(';')[0];
		const json = text ? JSON.parse(text) : undefined;
		return json && typeof json === 'object' && 'data' in json && !Array.isArray(json) ? json.data : json;
	}
	return {
		get: (path) => call('GET', path),
		post: (path, body) => call('POST', path, body),
		async createWorkflow(workflow) {
			const created = await call('POST', '/rest/workflows', workflow);
			await call('POST', `/rest/workflows/${created.id}/activate`, { versionId: created.versionId });
			return created;
		},
	};
}

async function startN8n(userFolder, logDir) {
	const port = await freePort();
	const env = {
		N8N_USER_FOLDER: userFolder,
		N8N_PORT: String(port),
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_HOST: '127.0.0.1',
		N8N_PROTOCOL: 'http',
		N8N_SECURE_COOKIE: 'false',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'true',
		// No Code node here; the runner broker would also want a fixed port (5679) on a shared machine.
		N8N_RUNNERS_ENABLED: 'false',
		N8N_LOG_LEVEL: 'info',
	};
	const proc = startProcess('n8n', process.execPath, [N8N_BIN, 'start'], { env, logDir });
	const baseUrl = `http://127.0.0.1:${port}`;
	const client = n8nClient(baseUrl);
	// The owner setup only answers once migrations ran and every node is loaded.
	await waitFor('n8n to start', STARTUP_MS, async () => {
		if (proc.exitCode !== null) throw new Error(`n8n exited with ${proc.exitCode}; see ${proc.logFile}`);
		return await client.post('/rest/owner/setup', OWNER);
	});
	return { baseUrl, client, proc };
}

/** Step 1: n8n's own node and credential type lists name ours. */
async function checkTypesLoaded(n8n) {
	const nodes = await n8n.client.get('/types/nodes.json');
	const ours = nodes
		.filter((node) => node.name.startsWith('n8n-nodes-cortadel.'))
		.map((node) => `${node.name} v${node.version} ${JSON.stringify(node.inputs)} -> ${JSON.stringify(node.outputs)}`)
		.sort();
	assert.deepEqual(ours, [
		'n8n-nodes-cortadel.cortadel v1 ["main"] -> ["main"]',
		'n8n-nodes-cortadel.cortadelMemory v1 [] -> ["ai_memory"]',
		'n8n-nodes-cortadel.cortadelTool v1 [] -> ["ai_tool"]',
	]);
	const credentials = await n8n.client.get('/types/credentials.json');
	const cortadelApi = credentials.find((credential) => credential.name === 'cortadelApi');
	assert.equal(cortadelApi?.displayName, 'Cortadel API');
	// n8n serves each icon from the path it resolved at load time.
	const icon = readFileSync(join(PACKAGE_DIR, 'icons', 'cortadel.svg'), 'utf8');
	const iconUrls = [...nodes.filter((node) => node.name.startsWith('n8n-nodes-cortadel.')), cortadelApi].map((type) => type.iconUrl);
	assert.equal(new Set(iconUrls).size, 3, `one icon beside each node and the credential: ${iconUrls}`);
	for (const iconUrl of iconUrls) {
		const response = await fetch(`${n8n.baseUrl}/${iconUrl}`);
		assert.equal(response.status, 200, `${iconUrl} answered ${response.status}`);
		assert.equal(await response.text(), icon);
	}
	log(`n8n lists our nodes:\n  ${ours.join('\n  ')}\n  credential cortadelApi ("${cortadelApi.displayName}")`);
	const version = (await n8n.client.get('/rest/settings')).versionCli;
	return version;
}

/** The credential's Test button: n8n runs its test request (GET /api/health) against the server. */
async function checkCredentialTest(n8n, credential, cortadel) {
	const data = { baseUrl: `${cortadel.baseUrl}/`, apiKey: '' };
	const result = await n8n.client.post('/rest/credentials/test', { credentials: { ...credential, type: 'cortadelApi', data } });
	assert.deepEqual(result, { status: 'OK', message: 'Connection successful!' });
	log(`credential test against ${cortadel.baseUrl}/ (trailing slash): ${result.message}`);
}

function exampleWithCredentials(credentials) {
	const workflow = JSON.parse(readFileSync(EXAMPLE, 'utf8'));
	for (const node of workflow.nodes) {
		if (node.type === '@n8n/n8n-nodes-langchain.chatTrigger') {
			// A production chat URL exists only for a public chat (the trigger's "Make Chat Publicly Available").
			node.parameters.public = true;
		} else if (node.type === '@n8n/n8n-nodes-langchain.lmChatOpenAi') {
			node.credentials = { openAiApi: credentials.openAi };
		} else if (node.type.startsWith('n8n-nodes-cortadel.')) {
			node.credentials = { cortadelApi: credentials.cortadel };
		}
	}
	return workflow;
}

async function chat(n8n, webhookId, body) {
	const response = await fetch(`${n8n.baseUrl}/webhook/${webhookId}/chat`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ action: 'sendMessage', ...body }),
	});
	const text = await response.text();
	assert.equal(response.status, 200, `chat webhook answered ${response.status}: ${text}`);
	return JSON.parse(text);
}

/** Steps 2-3: the example agent remembers across two executions (two chat sessions). */
async function checkAgentRemembers(n8n, cortadel, model, credentials) {
	const workflow = await n8n.client.createWorkflow(exampleWithCredentials(credentials));
	const webhookId = workflow.nodes.find((node) => node.type === '@n8n/n8n-nodes-langchain.chatTrigger').webhookId;
	const userId = 'e2e-n8n-agent-user';

	const first = await chat(n8n, webhookId, { sessionId: 'e2e-session-1', userId, chatInput: FACT_TOLD });
	assert.deepEqual(first, { output: MODEL_ANSWER });
	const stored = await (await fetch(`${cortadel.baseUrl}/api/v1/memories?user_id=${userId}`)).json();
	assert.deepEqual(
		stored.items.map((item) => [item.content, item.session_id, item.state]),
		[[FACT_STORED, 'e2e-session-1', 'active']],
	);

	const second = await chat(n8n, webhookId, { sessionId: 'e2e-session-2', userId, chatInput: 'When can I deploy?' });
	assert.deepEqual(second, { output: MODEL_ANSWER });

	const requests = await model.requests();
	assert.equal(requests.length, 2, 'one model call per execution');
	const systemMessage = exampleWithCredentials(credentials).nodes.find((node) => node.name === 'AI Agent').parameters.options.systemMessage;
	for (const request of requests) {
		// Both Cortadel tool nodes reach the model as tools: the loader built the usableAsTool variant.
		assert.deepEqual(request.body.tools.map((tool) => tool.function.name).sort(), ['Save_Memory', 'Search_Memories']);
	}
	assert.deepEqual(requests[0].body.messages, [
		{ role: 'system', content: systemMessage },
		{ role: 'user', content: FACT_TOLD },
	]);
	const recalled = `${RECALL_HEADER}\n- ${FACT_STORED}`;
	assert.deepEqual(requests[1].body.messages, [
		{ role: 'system', content: systemMessage },
		{ role: 'user', content: recalled },
		{ role: 'user', content: 'When can I deploy?' },
	]);
	log(`agent: fact stored by execution 1, recalled into the prompt of execution 2:\n  ${recalled.replaceAll('\n', '\n  ')}`);
	return { webhookId, userId, systemMessage };
}

/** The agent calls the Save Memory tool (a Cortadel node run as a tool) when the model asks it to. */
async function checkAgentToolCall(n8n, cortadel, model, agent) {
	const fact = "User's dog is called Pixel.";
	await model.script([{ tool_call: { name: 'Save_Memory', arguments: { fact } } }]);
	const before = (await model.requests()).length;
	const reply = await chat(n8n, agent.webhookId, {
		sessionId: 'e2e-session-3',
		userId: agent.userId,
		chatInput: 'Please remember that my dog is called Pixel.',
	});
	assert.deepEqual(reply, { output: MODEL_ANSWER });
	const requests = (await model.requests()).slice(before);
	assert.equal(requests.length, 2, 'the tool call, then the answer');
	const toolResult = requests[1].body.messages.find((message) => message.role === 'tool');
	const saved = JSON.parse(toolResult.content);
	const savedItem = Array.isArray(saved) ? saved[0] : saved;
	assert.equal(savedItem.content, fact);
	assert.equal(savedItem.event, 'ADD');
	const stored = await (await fetch(`${cortadel.baseUrl}/api/v1/memories?user_id=${agent.userId}`)).json();
	assert.deepEqual(stored.items.map((item) => item.content).sort(), [fact, FACT_STORED].sort());
	const viaTool = stored.items.find((item) => item.content === fact);
	assert.equal(viaTool.app_name, 'n8n-nodes-cortadel');
	log(`agent: the Save Memory tool stored "${fact}" (app n8n-nodes-cortadel); the tool result went back to the model`);
}

/** A webhook → Cortadel workflow for one operation; the webhook answers with the node's items. */
function actionWorkflow(operation, parameters, credentials) {
	return {
		name: `Cortadel ${operation} (e2e)`,
		nodes: [
			{
				id: `e2e-webhook-${operation}`,
				name: 'Webhook',
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2,
				position: [0, 0],
				webhookId: `e2e-cortadel-${operation}`,
				parameters: { httpMethod: 'POST', path: `e2e-cortadel-${operation}`, responseMode: 'lastNode', responseData: 'allEntries', options: {} },
			},
			{
				id: `e2e-cortadel-${operation}`,
				name: 'Cortadel',
				type: 'n8n-nodes-cortadel.cortadel',
				typeVersion: 1,
				position: [260, 0],
				credentials: { cortadelApi: credentials.cortadel },
				parameters: { resource: 'memory', operation, userId: '={{ $json.body.userId }}', ...parameters },
			},
		],
		connections: { Webhook: { main: [[{ node: 'Cortadel', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
		active: false,
	};
}

/** Step 4: every read/write operation of the action node, checked against exact values. */
async function checkActionNode(n8n, credentials) {
	const workflows = {
		add: actionWorkflow('add', { text: '={{ $json.body.text }}', options: {} }, credentials),
		search: actionWorkflow('search', { query: '={{ $json.body.query }}', options: { topK: 5 } }, credentials),
		list: actionWorkflow('list', { returnAll: true, options: {} }, credentials),
		get: actionWorkflow('get', { memoryId: '={{ $json.body.memoryId }}' }, credentials),
		delete: actionWorkflow('delete', { memoryIds: '={{ $json.body.memoryIds }}' }, credentials),
	};
	for (const workflow of Object.values(workflows)) await n8n.client.createWorkflow(workflow);
	const run = async (operation, body) => {
		const response = await fetch(`${n8n.baseUrl}/webhook/e2e-cortadel-${operation}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ userId: 'e2e-n8n-action-user', ...body }),
		});
		const text = await response.text();
		assert.equal(response.status, 200, `${operation} answered ${response.status}: ${text}`);
		const items = JSON.parse(text);
		return Array.isArray(items) ? items : [items];
	};

	const texts = ['I prefer tea over coffee.', 'My sister lives in Lisbon.'];
	const added = [];
	for (const text of texts) {
		const [item, ...rest] = await run('add', { text });
		assert.equal(rest.length, 0);
		assert.equal(item.event, 'ADD');
		assert.equal(item.app_name, 'n8n-nodes-cortadel');
		added.push(item);
	}
	assert.deepEqual(added.map((item) => item.content), ['User prefers tea over coffee.', "User's sister lives in Lisbon."]);

	const hits = await run('search', { query: 'What does the user like to drink?' });
	assert.equal(hits[0].content, 'User prefers tea over coffee.');
	assert.equal(hits[0].id, added[0].id);

	const listed = await run('list', {});
	assert.deepEqual(listed.map((item) => item.id).sort(), added.map((item) => item.id).sort());

	const [got, ...moreGot] = await run('get', { memoryId: added[1].id });
	assert.equal(moreGot.length, 0);
	assert.deepEqual([got.id, got.text, got.state], [added[1].id, "User's sister lives in Lisbon.", 'active']);

	const deleted = await run('delete', { memoryIds: added[0].id });
	assert.deepEqual(deleted, [{ message: 'Deleted 1 memory', memory_ids: [added[0].id] }]);
	const remaining = await run('list', {});
	assert.deepEqual(remaining.map((item) => item.content), ["User's sister lives in Lisbon."]);
	log('action node: add x2, search, list (2), get, delete, list (1) returned the expected memories');
}

async function main() {
	const workDir = mkdtempSync(join(tmpdir(), 'cortadel-e2e-n8n-'));
	const userFolder = join(workDir, 'n8n-user');
	const stops = [];
	let passed = false;
	try {
		const tarball = installPackage(workDir, userFolder);
		log(`installed ${tarball} into ${join(userFolder, '.n8n', 'nodes')}`);

		const cortadel = await startServer();
		stops.push(() => cortadel.stop());
		const model = await startScriptedModel(workDir);
		stops.push(() => model.stop());
		log(`Cortadel on ${cortadel.baseUrl}, scripted model on ${model.v1Url}`);

		const n8n = await startN8n(userFolder, workDir);
		stops.push(() => n8n.proc.stop());
		const version = await checkTypesLoaded(n8n);
		log(`n8n ${version} on ${n8n.baseUrl}`);

		const credentials = {
			openAi: await n8n.client.post('/rest/credentials', {
				name: 'Scripted model',
				type: 'openAiApi',
				data: { apiKey: 'sk-e2e-scripted', url: model.v1Url },
			}),
			cortadel: await n8n.client.post('/rest/credentials', {
				name: 'Cortadel (e2e)',
				type: 'cortadelApi',
				data: { baseUrl: cortadel.baseUrl, apiKey: '' },
			}),
		};
		for (const key of Object.keys(credentials)) credentials[key] = { id: credentials[key].id, name: credentials[key].name };
		await checkCredentialTest(n8n, credentials.cortadel, cortadel);

		const agent = await checkAgentRemembers(n8n, cortadel, model, credentials);
		await checkAgentToolCall(n8n, cortadel, model, agent);
		await checkActionNode(n8n, credentials);
		passed = true;
		log('passed');
	} finally {
		for (const stop of stops.reverse()) await stop();
		const n8nLog = join(workDir, 'n8n.log');
		if (!passed && existsSync(n8nLog)) {
			console.error(`--- n8n log (tail) ---\n${readFileSync(n8nLog, 'utf8').split('\n').slice(-60).join('\n')}`);
		}
		if (process.env.E2E_KEEP === '1') log(`kept ${workDir} (n8n.log, scripted-llm.log)`);
		else rmSync(workDir, { recursive: true, force: true });
	}
}

await main();
// Every child is stopped by now; exit rather than wait for idle HTTP keep-alive sockets to time out.
process.exit(0);
