import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_CONTEXT_HEADER } from '../../memory/context';
import { memoryTypeOptions, searchModeOptions } from '../../shared/fields';

export const memoryProperties: INodeProperties[] = [
	{
		displayName: 'User ID',
		name: 'userId',
		type: 'string',
		default: '={{ $json.userId ?? $json.sessionId }}',
		required: true,
		description:
			'The person these memories belong to. Memories accumulate against this ID across sessions; without a real user identity, the session ID gives per-session memory.',
	},
	{
		displayName: 'Session ID',
		name: 'sessionId',
		type: 'string',
		default: '={{ $json.sessionId }}',
		description: 'Groups the facts this conversation produces. Stored with every write.',
	},
	{
		displayName: 'Scope Recall to Session',
		name: 'scopeRecallToSession',
		type: 'boolean',
		default: false,
		description:
			'Whether to recall only facts stored under this session ID instead of everything known about the user',
	},
	{
		displayName: 'Top K',
		name: 'topK',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 50 },
		default: 5,
		description: 'Maximum number of memories injected per turn',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [
			{
				displayName: 'Context Format',
				name: 'contextFormat',
				type: 'options',
				options: [
					{ name: 'Block', value: 'block', description: 'One message listing all recalled facts' },
					{ name: 'One Message Per Fact', value: 'messages' },
				],
				default: 'block',
			},
			{
				displayName: 'Context Header',
				name: 'contextHeader',
				type: 'string',
				default: '',
				placeholder: DEFAULT_CONTEXT_HEADER,
				description: 'Line placed above the facts in the block format. Empty uses the built-in sentence.',
			},
			{
				displayName: 'Context Role',
				name: 'contextRole',
				type: 'options',
				options: [
					{
						name: 'User',
						value: 'user',
						description: 'Safe with every chat model provider',
					},
					{
						name: 'System',
						value: 'system',
						description:
							'OpenAI-style models only: the Anthropic Chat Model rejects a system message that is not first',
					},
				],
				default: 'user',
				description: 'Role the recalled context is injected under',
			},
			{
				displayName: 'Input Key',
				name: 'inputKey',
				type: 'string',
				default: 'input',
				description: "Key of the user's message in the agent's values",
			},
			{
				displayName: 'Memory Key',
				name: 'memoryKey',
				type: 'string',
				default: 'chat_history',
				description:
					"Prompt variable the context is written to. The AI Agent's streaming mode always reads chat_history.",
			},
			{
				displayName: 'Memory Type',
				name: 'memoryType',
				type: 'options',
				options: [{ name: 'Any', value: '' }, ...memoryTypeOptions],
				default: '',
				description: 'Recall only memories of this cognitive type',
			},
			{
				displayName: 'Output Key',
				name: 'outputKey',
				type: 'string',
				default: 'output',
				description: "Key of the agent's answer in the agent's output values",
			},
			{
				displayName: 'Persist Turns',
				name: 'persistTurns',
				type: 'boolean',
				default: true,
				description: 'Whether to send each finished turn to Cortadel. Off makes the memory read-only.',
			},
			{
				displayName: 'Project',
				name: 'project',
				type: 'string',
				default: '',
				description: 'Project scope recorded on facts extracted from this chat',
			},
			{
				displayName: 'Recall Cache TTL (Ms)',
				name: 'recallCacheTtlMs',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 15000,
				description: 'How long an identical recall is answered from a local cache. 0 disables the cache.',
			},
			{
				displayName: 'Rerank',
				name: 'rerank',
				type: 'boolean',
				default: false,
				description:
					'Whether to rerank hits with the cross-encoder (this also enables the graph and session arms)',
			},
			{
				displayName: 'Retrieval Mode',
				name: 'mode',
				type: 'options',
				options: searchModeOptions,
				default: 'hybrid',
			},
			{
				displayName: 'Return Messages',
				name: 'returnMessages',
				type: 'boolean',
				default: true,
				description: 'Whether to return message objects rather than one rendered string',
			},
			{
				displayName: 'Tags',
				name: 'tags',
				type: 'string',
				default: '',
				placeholder: 'support, onboarding',
				description: 'Comma-separated tags applied to every fact stored from this chat',
			},
		],
	},
];
