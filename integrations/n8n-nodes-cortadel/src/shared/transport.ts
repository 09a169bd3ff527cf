import type {
	IDataObject,
	IExecuteFunctions,
	IHttpRequestMethods,
	ISupplyDataFunctions,
} from 'n8n-workflow';

/** Name of the credential type both nodes authenticate with. */
export const CREDENTIAL_TYPE = 'cortadelApi';

/** What Cortadel records as the app: this package's published name. */
export const APP_NAME = 'n8n-nodes-cortadel';

export const DEFAULT_BASE_URL = 'http://localhost:3001';

/** Same budget the Cortadel SDKs use. */
const REQUEST_TIMEOUT_MS = 100_000;

/** One call against the REST contract, described independently of how it is sent. */
export interface CortadelRequest {
	method: IHttpRequestMethods;
	path: string;
	body?: IDataObject;
	qs?: IDataObject;
}

/** Sends a request and resolves to the decoded JSON response. */
export type Transport = <T>(request: CortadelRequest) => Promise<T>;

type NodeContext = IExecuteFunctions | ISupplyDataFunctions;

/**
 * Build a transport bound to a node's execution context. Every request goes through
 * n8n's `httpRequestWithAuthentication`, which applies the credential's auth header and
 * the instance's proxy/TLS settings.
 */
export function createTransport(context: NodeContext): Transport {
	let baseUrl: Promise<string> | undefined;
	const resolveBaseUrl = async (): Promise<string> => {
		const credentials = await context.getCredentials<{ baseUrl?: string }>(CREDENTIAL_TYPE);
		return (credentials.baseUrl || DEFAULT_BASE_URL).replace(/\/+$/, '');
	};
	return async <T>(request: CortadelRequest): Promise<T> => {
		baseUrl ??= resolveBaseUrl();
		const response: unknown = await context.helpers.httpRequestWithAuthentication.call(
			context,
			CREDENTIAL_TYPE,
			{
				method: request.method,
				url: `${await baseUrl}${request.path}`,
				headers: { Accept: 'application/json' },
				...(request.body === undefined ? {} : { body: request.body }),
				...(request.qs === undefined ? {} : { qs: request.qs }),
				json: true,
				timeout: REQUEST_TIMEOUT_MS,
			},
		);
		return response as T;
	};
}

/** Drop keys whose value is undefined, null or an empty string, so optional fields stay absent. */
export function compact<T extends object>(fields: T): IDataObject {
	const out: IDataObject = {};
	for (const [key, value] of Object.entries(fields)) {
		if (value === undefined || value === null || value === '') continue;
		out[key] = value as IDataObject[string];
	}
	return out;
}

/** Split a comma-separated field into trimmed, non-empty parts. */
export function splitList(value: string | undefined): string[] {
	return (value ?? '')
		.split(',')
		.map((part) => part.trim())
		.filter((part) => part.length > 0);
}

/** The HTTP status behind an error thrown by n8n's request helpers, when there is one. */
export function httpStatusOf(error: unknown): number | undefined {
	if (typeof error !== 'object' || error === null) return undefined;
	const candidate = error as {
		httpCode?: string | null;
		response?: { status?: number };
		cause?: unknown;
	};
	if (typeof candidate.response?.status === 'number') return candidate.response.status;
	if (candidate.httpCode && /^\d{3}$/.test(candidate.httpCode)) return Number(candidate.httpCode);
	return candidate.cause === undefined ? undefined : httpStatusOf(candidate.cause);
}
