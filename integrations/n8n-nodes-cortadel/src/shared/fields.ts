import type { INodePropertyOptions } from 'n8n-workflow';

/** Option lists both nodes offer. */

export const searchModeOptions: INodePropertyOptions[] = [
	{ name: 'Hybrid', value: 'hybrid', description: 'Fuse BM25 keyword and vector results' },
	{ name: 'Text', value: 'text', description: 'BM25 keyword search only' },
	{ name: 'Vector', value: 'vector', description: 'Embedding similarity only' },
];

export const memoryTypeOptions: INodePropertyOptions[] = [
	{ name: 'Episodic', value: 'episodic' },
	{ name: 'Procedural', value: 'procedural' },
	{ name: 'Semantic', value: 'semantic' },
];
