import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { CortadelApi } from '../src/credentials/CortadelApi.credentials';
import { resolveCredentialExpression } from './helpers/credentials';

describe('Cortadel API credential', () => {
	const credential = new CortadelApi();

	it('has a base URL defaulting to a local server and an optional, masked API key', () => {
		assert.equal(credential.name, 'cortadelApi');
		assert.equal(credential.displayName, 'Cortadel API');
		const [baseUrl, apiKey] = credential.properties;
		assert.deepEqual([baseUrl.name, baseUrl.default, baseUrl.required], ['baseUrl', 'http://localhost:3001', true]);
		assert.deepEqual([apiKey.name, apiKey.default, apiKey.required, apiKey.typeOptions], ['apiKey', '', undefined, { password: true }]);
	});

	it('sends the key as a Bearer token, and no token without a key', () => {
		const header = credential.authenticate.properties.headers?.Authorization as string;
		assert.equal(resolveCredentialExpression(header, { apiKey: 'ck_abc.123' }), 'Bearer ck_abc.123');
		assert.equal(resolveCredentialExpression(header, { apiKey: '' }), '');
	});

	it('is tested with GET /api/health on the base URL, trailing slashes removed', () => {
		const { request } = credential.test;
		assert.equal(request.method, 'GET');
		assert.equal(request.url, '/api/health');
		const baseURL = String(request.baseURL);
		assert.equal(resolveCredentialExpression(baseURL, { baseUrl: 'https://memory.example.com//' }), 'https://memory.example.com');
		assert.equal(resolveCredentialExpression(baseURL, { baseUrl: 'http://localhost:3001' }), 'http://localhost:3001');
	});
});
