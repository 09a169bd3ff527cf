/** What n8n and npm will see of the built package (run after `npm run build`). */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, it } from 'node:test';

const PACKAGE_DIR = join(__dirname, '..', '..');
const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as {
	name: string;
	main: string;
	files: string[];
	dependencies?: Record<string, string>;
	peerDependencies?: Record<string, string>;
	peerDependenciesMeta?: Record<string, { optional?: boolean }>;
	n8n: { n8nNodesApiVersion: number; credentials: string[]; nodes: string[] };
};

describe('built package', () => {
	it('is n8n-nodes-cortadel with no run-time dependencies and n8n-workflow as a peer', () => {
		assert.equal(manifest.name, 'n8n-nodes-cortadel');
		assert.equal(manifest.dependencies, undefined);
		assert.deepEqual(Object.keys(manifest.peerDependencies ?? {}), ['n8n-workflow']);
		// Optional, so `npm install <tarball>` in ~/.n8n/nodes uses the host's n8n-workflow instead of
		// installing npm's latest beside it (a second copy, which also needs a native isolated-vm build).
		assert.deepEqual(manifest.peerDependenciesMeta, { 'n8n-workflow': { optional: true } });
		assert.deepEqual(manifest.files, ['dist']);
	});

	it('lists both nodes and the credential in its n8n section', () => {
		assert.equal(manifest.n8n.n8nNodesApiVersion, 1);
		assert.deepEqual(manifest.n8n.credentials, ['dist/credentials/CortadelApi.credentials.js']);
		assert.deepEqual(manifest.n8n.nodes, [
			'dist/nodes/Cortadel/Cortadel.node.js',
			'dist/nodes/CortadelMemory/CortadelMemory.node.js',
		]);
	});

	for (const entry of [...manifest.n8n.credentials, ...manifest.n8n.nodes]) {
		it(`${entry} is CommonJS exporting a class named after the file, with its icon beside it`, () => {
			const file = join(PACKAGE_DIR, entry);
			assert.ok(existsSync(file), `${entry} is missing: run npm run build`);
			assert.match(readFileSync(file, 'utf8'), /^"use strict";/);
			const className = basename(entry).split('.')[0];
			const exported = (require(file) as Record<string, unknown>)[className];
			assert.equal(typeof exported, 'function', `${entry} does not export ${className}`);
			const instance = new (exported as new () => { description?: { icon?: string }; icon?: string })();
			const icon = (instance.description ?? instance).icon as string;
			assert.equal(icon, 'file:cortadel.svg');
			assert.ok(existsSync(join(dirname(file), 'cortadel.svg')));
		});
	}

	it('the package entry point exposes the curated public surface', () => {
		const api = require(join(PACKAGE_DIR, manifest.main)) as Record<string, unknown>;
		assert.deepEqual(Object.keys(api).sort(), [
			'APP_NAME',
			'Cortadel',
			'CortadelApi',
			'CortadelChatMemory',
			'CortadelMemory',
			'DEFAULT_MEMORY_SETTINGS',
		]);
		assert.equal(api.APP_NAME, manifest.name);
	});
});
