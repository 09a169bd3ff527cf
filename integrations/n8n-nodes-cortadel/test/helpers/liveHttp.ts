import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import type { IDataObject, IHttpRequestOptions, JsonObject } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { CortadelApi } from '../../src/credentials/CortadelApi.credentials';
import type { HttpHandler } from './context';
import { resolveCredentialExpression } from './credentials';

export const REPO_ROOT = join(__dirname, '..', '..', '..', '..', '..');

export interface RunningServer {
	baseUrl: string;
	stop(): Promise<void>;
}

/** Start a real Cortadel server through the repository's shared starter. */
export async function startCortadel(env?: Record<string, string>): Promise<RunningServer> {
	const starter = pathToFileURL(join(REPO_ROOT, 'tools', 'test-server.mjs')).href;
	const { startServer } = (await import(starter)) as {
		startServer: (options?: { env?: Record<string, string> }) => Promise<RunningServer>;
	};
	return startServer({ env });
}

/** Mint a bearer key for `userId` with the server CLI, under the same auth secret. */
export function mintKey(userId: string, env: Record<string, string>): string {
	const venvPython = join(REPO_ROOT, '.venv', 'bin', 'python');
	const python = process.env.CORTADEL_PYTHON ?? (existsSync(venvPython) ? venvPython : 'python3');
	return execFileSync(python, ['-m', 'cortadel_server', 'mint-key', userId], {
		env: { ...process.env, ...env },
		encoding: 'utf8',
	}).trim();
}

/**
 * A real `httpRequestWithAuthentication`: applies the Cortadel API credential's authenticate
 * block, sends the request with fetch, decodes JSON and fails like n8n does on a non-2xx answer.
 */
export function liveHttp(credentials: IDataObject): HttpHandler {
	const headers = new CortadelApi().authenticate.properties.headers as Record<string, string>;
	const authHeaders = Object.fromEntries(
		Object.entries(headers)
			.map(([name, value]): [string, string] => [name, String(resolveCredentialExpression(value, credentials))])
			.filter(([, value]) => value !== ''),
	);
	return async (options: IHttpRequestOptions) => {
		const url = new URL(options.url);
		for (const [key, value] of Object.entries(options.qs ?? {})) url.searchParams.set(key, typeof value === 'string' ? value : JSON.stringify(value));
		const response = await fetch(url, {
			method: options.method ?? 'GET',
			headers: {
				...(options.headers as Record<string, string>),
				...authHeaders,
				...(options.body === undefined ? {} : { 'Content-Type': 'application/json' }),
			},
			body: options.body === undefined ? undefined : JSON.stringify(options.body),
			signal: AbortSignal.timeout(options.timeout ?? 30_000),
		});
		const body = (await response.json()) as JsonObject;
		if (!response.ok) {
			throw new NodeApiError(
				{ id: 'live', name: 'live', type: 'live', typeVersion: 1, position: [0, 0], parameters: {} },
				{ ...body, httpCode: String(response.status) },
				{ httpCode: String(response.status) },
			);
		}
		return body;
	};
}
