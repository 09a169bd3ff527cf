import { NodeApiError } from 'n8n-workflow';
import type {
	IDataObject,
	JsonObject,
	IExecuteFunctions,
	IHttpRequestOptions,
	INode,
	ISupplyDataFunctions,
} from 'n8n-workflow';

/** One call a node made through `httpRequestWithAuthentication`. */
export interface SentRequest {
	credentialType: string;
	options: IHttpRequestOptions;
}

export type HttpHandler = (options: IHttpRequestOptions) => Promise<unknown>;

/** One entry the node wrote to the execution log through addInputData / addOutputData. */
export interface LoggedEntry {
	kind: 'input' | 'output';
	connectionType: string;
	index: number;
	data: unknown;
}

export interface ContextOptions {
	/** Parameters per item; a single object applies to every item. */
	parameters: IDataObject | IDataObject[];
	/** Answers each request; defaults to failing loudly so unexpected calls are visible. */
	http?: HttpHandler;
	credentials?: IDataObject;
	items?: number;
	continueOnFail?: boolean;
}

export interface FakeContext {
	sent: SentRequest[];
	warnings: string[];
	log: LoggedEntry[];
}

const NODE: INode = {
	id: 'node-under-test',
	name: 'Cortadel Under Test',
	type: 'n8n-nodes-cortadel.cortadel',
	typeVersion: 1,
	position: [0, 0],
	parameters: {},
};

const unexpected: HttpHandler = async (options) => {
	throw new Error(`unexpected request ${options.method} ${options.url}`);
};

/** The members of n8n's execution contexts the two nodes use, with HTTP stubbed at the helper. */
function buildContext(options: ContextOptions): FakeContext & Record<string, unknown> {
	const sent: SentRequest[] = [];
	const warnings: string[] = [];
	const log: LoggedEntry[] = [];
	const http = options.http ?? unexpected;
	const itemCount = options.items ?? (Array.isArray(options.parameters) ? options.parameters.length : 1);
	let runIndex = 0;
	const parametersFor = (itemIndex: number): IDataObject =>
		Array.isArray(options.parameters) ? options.parameters[itemIndex] : options.parameters;
	return {
		sent,
		warnings,
		log,
		logger: {
			warn: (message: string) => warnings.push(message),
			info: () => undefined,
			debug: () => undefined,
			error: () => undefined,
		},
		getNode: () => NODE,
		getInputData: () => Array.from({ length: itemCount }, (_, index) => ({ json: { index } })),
		continueOnFail: () => options.continueOnFail ?? false,
		getCredentials: async () => options.credentials ?? { baseUrl: 'http://cortadel.test:3001/', apiKey: '' },
		getNodeParameter: (name: string, itemIndex: number, fallback?: unknown) => {
			const value = parametersFor(itemIndex)[name];
			if (value !== undefined) return value;
			if (fallback !== undefined) return fallback;
			throw new Error(`Could not get parameter "${name}"`);
		},
		addInputData: (connectionType: string, data: unknown) => {
			const index = runIndex++;
			log.push({ kind: 'input', connectionType, index, data });
			return { index };
		},
		addOutputData: (connectionType: string, index: number, data: unknown) => {
			log.push({ kind: 'output', connectionType, index, data });
		},
		helpers: {
			async httpRequestWithAuthentication(credentialType: string, requestOptions: IHttpRequestOptions) {
				sent.push({ credentialType, options: requestOptions });
				return http(requestOptions);
			},
		},
	};
}

export function executeContext(options: ContextOptions): IExecuteFunctions & FakeContext {
	return buildContext(options) as unknown as IExecuteFunctions & FakeContext;
}

export function supplyContext(options: ContextOptions): ISupplyDataFunctions & FakeContext {
	return buildContext(options) as unknown as ISupplyDataFunctions & FakeContext;
}

/** The error n8n's request helper throws for a non-2xx answer: a NodeApiError around the HTTP error. */
export function httpError(status: number, body: IDataObject = {}): Error {
	const cause = Object.assign(new Error(`Request failed with status code ${status}`), {
		response: { status, data: body },
	});
	return new NodeApiError(NODE, cause as unknown as JsonObject, { httpCode: String(status) });
}

/** Replies in order; throws when more requests arrive than replies were given. */
export function replies(...answers: unknown[]): HttpHandler {
	const queue = [...answers];
	return async (options) => {
		if (queue.length === 0) throw new Error(`no reply left for ${options.method} ${options.url}`);
		const answer = queue.shift();
		if (answer instanceof Error) throw answer;
		return answer;
	};
}
