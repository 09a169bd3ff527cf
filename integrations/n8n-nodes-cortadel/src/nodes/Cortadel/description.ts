import type { INodeProperties } from 'n8n-workflow';

import { memoryTypeOptions, searchModeOptions } from '../../shared/fields';
import { APP_NAME } from '../../shared/transport';

export type Operation = 'add' | 'addConversation' | 'search' | 'list' | 'get' | 'delete';

const forOperation = (...operation: Operation[]) => ({
	show: { resource: ['memory'], operation },
});

const memoryTypeField = (description: string): INodeProperties => ({
	displayName: 'Memory Type',
	name: 'memoryType',
	type: 'options',
	options: memoryTypeOptions,
	default: 'semantic',
	description,
});

const sessionIdField: INodeProperties = {
	displayName: 'Session ID',
	name: 'sessionId',
	type: 'string',
	default: '',
};

export const actionProperties: INodeProperties[] = [
	{
		displayName: 'Resource',
		name: 'resource',
		type: 'options',
		noDataExpression: true,
		options: [{ name: 'Memory', value: 'memory' }],
		default: 'memory',
	},
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['memory'] } },
		options: [
			{
				name: 'Add',
				value: 'add',
				description: 'Store one piece of text as a memory',
				action: 'Add a memory',
			},
			{
				name: 'Add Conversation',
				value: 'addConversation',
				description: 'Distil facts out of a conversation transcript and store them',
				action: 'Add memories from a conversation',
			},
			{
				name: 'Delete',
				value: 'delete',
				description: 'Delete memories by ID',
				action: 'Delete memories',
			},
			{
				name: 'Get',
				value: 'get',
				description: 'Fetch one memory with its validity window',
				action: 'Get a memory',
			},
			{
				name: 'List',
				value: 'list',
				description: 'Page through stored memories, newest first',
				action: 'List memories',
			},
			{
				name: 'Search',
				value: 'search',
				description: 'Find memories relevant to a query (hybrid keyword and vector search)',
				action: 'Search memories',
			},
		],
		default: 'search',
	},
	{
		displayName: 'User ID',
		name: 'userId',
		type: 'string',
		required: true,
		default: '',
		displayOptions: { show: { resource: ['memory'] } },
		description: 'The user the memories belong to',
	},

	// ----- Add -----
	{
		displayName: 'Text',
		name: 'text',
		type: 'string',
		typeOptions: { rows: 3 },
		required: true,
		default: '',
		displayOptions: forOperation('add'),
		description: 'What to remember',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: forOperation('add'),
		options: [
			{
				displayName: 'App',
				name: 'app',
				type: 'string',
				default: APP_NAME,
				description: 'App recorded as the creator of the memory',
			},
			{
				displayName: 'Infer',
				name: 'infer',
				type: 'boolean',
				default: true,
				description:
					'Whether Cortadel may rewrite the text and extract entities. Off stores the text verbatim (deduplication still applies).',
			},
			memoryTypeField('Cognitive type to record instead of letting the server classify it'),
			{
				displayName: 'Metadata',
				name: 'metadata',
				type: 'json',
				default: '{}',
				description: 'JSON object stored with the memory',
			},
		],
	},

	// ----- Add Conversation -----
	{
		displayName: 'Messages',
		name: 'messages',
		type: 'fixedCollection',
		typeOptions: { multipleValues: true, sortable: true },
		required: true,
		default: {},
		placeholder: 'Add Message',
		displayOptions: forOperation('addConversation'),
		description: 'The conversation, in order',
		options: [
			{
				displayName: 'Message',
				name: 'message',
				values: [
					{
						displayName: 'Role',
						name: 'role',
						type: 'options',
						options: [
							{ name: 'User', value: 'user' },
							{ name: 'Assistant', value: 'assistant' },
							{ name: 'System', value: 'system' },
						],
						default: 'user',
					},
					{
						displayName: 'Content',
						name: 'content',
						type: 'string',
						typeOptions: { rows: 2 },
						default: '',
					},
				],
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: forOperation('addConversation'),
		options: [
			{
				displayName: 'Is Agent Memory',
				name: 'isAgentMemory',
				type: 'boolean',
				default: false,
				description: 'Whether to extract facts about the assistant instead of the user',
			},
			{
				displayName: 'Project',
				name: 'project',
				type: 'string',
				default: '',
				description: 'Project scope recorded on the extracted facts',
			},
			{ ...sessionIdField, description: 'Session the extracted facts are grouped under' },
			{
				displayName: 'Tags',
				name: 'tags',
				type: 'string',
				default: '',
				description: 'Comma-separated tags applied to every extracted fact',
			},
		],
	},

	// ----- Search -----
	{
		displayName: 'Query',
		name: 'query',
		type: 'string',
		required: true,
		default: '',
		displayOptions: forOperation('search'),
		description: 'What to look for, in natural language',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: forOperation('search'),
		options: [
			memoryTypeField('Return only memories of this cognitive type'),
			{
				displayName: 'Mode',
				name: 'mode',
				type: 'options',
				options: searchModeOptions,
				default: 'hybrid',
			},
			{
				displayName: 'Rerank',
				name: 'rerank',
				type: 'boolean',
				default: false,
				description: 'Whether to rerank hits with the cross-encoder',
			},
			{ ...sessionIdField, description: 'Return only facts stored under this session' },
			{
				displayName: 'Top K',
				name: 'topK',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 50 },
				default: 10,
				description: 'Maximum number of results',
			},
		],
	},

	// ----- List -----
	{
		displayName: 'Return All',
		name: 'returnAll',
		type: 'boolean',
		default: false,
		displayOptions: forOperation('list'),
		description: 'Whether to return all results or only up to a given limit',
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 100 },
		default: 50,
		displayOptions: { show: { resource: ['memory'], operation: ['list'], returnAll: [false] } },
		description: 'Max number of results to return',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: forOperation('list'),
		options: [
			{
				displayName: 'App ID',
				name: 'appId',
				type: 'string',
				default: '',
				description: 'Only memories created by this app',
			},
			{
				displayName: 'Categories',
				name: 'categories',
				type: 'string',
				default: '',
				description: 'Comma-separated category names to filter by',
			},
			{
				displayName: 'Include Superseded',
				name: 'includeSuperseded',
				type: 'boolean',
				default: false,
				description: 'Whether to include memories a newer version has replaced',
			},
			memoryTypeField('Return only memories of this cognitive type'),
			{
				displayName: 'Page',
				name: 'page',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 1,
				description: 'Page to return (or, with Return All, the page to start from)',
			},
			{
				displayName: 'Search Query',
				name: 'searchQuery',
				type: 'string',
				default: '',
				description: 'Only memories matching this text',
			},
		],
	},

	// ----- Get -----
	{
		displayName: 'Memory ID',
		name: 'memoryId',
		type: 'string',
		required: true,
		default: '',
		displayOptions: forOperation('get'),
	},

	// ----- Delete -----
	{
		displayName: 'Memory IDs',
		name: 'memoryIds',
		type: 'string',
		required: true,
		default: '',
		displayOptions: forOperation('delete'),
		description: 'Comma-separated IDs of the memories to delete',
	},
];
