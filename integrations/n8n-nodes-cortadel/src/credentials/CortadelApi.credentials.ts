import type {
	IAuthenticateGeneric,
	ICredentialTestRequest,
	ICredentialType,
	INodeProperties,
} from 'n8n-workflow';

import { CREDENTIAL_TYPE, DEFAULT_BASE_URL } from '../shared/transport';

export class CortadelApi implements ICredentialType {
	name = CREDENTIAL_TYPE;

	displayName = 'Cortadel API';

	icon = 'file:cortadel.svg' as const;

	documentationUrl = 'https://github.com/cortadel/cortadel/tree/main/integrations/n8n-nodes-cortadel';

	properties: INodeProperties[] = [
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: DEFAULT_BASE_URL,
			placeholder: 'https://app.cortadel.ai',
			description: 'Root URL of the Cortadel server, without a trailing /api',
			required: true,
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description:
				'Sent as a Bearer token. Leave empty for a self-hosted server that runs without an auth secret.',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				Authorization: '={{ $credentials.apiKey ? "Bearer " + $credentials.apiKey : "" }}',
			},
		},
	};

	/** A degraded server answers 503 here, which n8n reports as a failed test. */
	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{ $credentials.baseUrl.replace(/\\/+$/, "") }}',
			url: '/api/health',
			method: 'GET',
		},
	};
}
