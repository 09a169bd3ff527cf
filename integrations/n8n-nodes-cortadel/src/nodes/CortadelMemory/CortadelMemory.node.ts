import type {
	IDataObject,
	INodeType,
	INodeTypeDescription,
	ISupplyDataFunctions,
	SupplyData,
} from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';

import type { MemorySettings } from '../../memory/CortadelChatMemory';
import { CortadelChatMemory, DEFAULT_MEMORY_SETTINGS } from '../../memory/CortadelChatMemory';
import type { MessageFactory } from '../../memory/messages';
import { loadMessageFactory } from '../../memory/messages';
import { textParameter } from '../../shared/parameters';
import { CREDENTIAL_TYPE, createTransport, splitList } from '../../shared/transport';
import { memoryProperties } from './description';

let messageFactory: Promise<MessageFactory> | undefined;

interface MemoryOptions {
	mode?: MemorySettings['mode'];
	rerank?: boolean;
	memoryType?: MemorySettings['memoryType'] | '';
	contextFormat?: MemorySettings['contextFormat'];
	contextRole?: MemorySettings['contextRole'];
	contextHeader?: string;
	memoryKey?: string;
	inputKey?: string;
	outputKey?: string;
	returnMessages?: boolean;
	persistTurns?: boolean;
	project?: string;
	tags?: string;
	recallCacheTtlMs?: number;
}

/** Resolve the node's fields and options for one item into memory settings. */
export function readMemorySettings(context: ISupplyDataFunctions, itemIndex: number): MemorySettings {
	const userId = textParameter(context.getNodeParameter('userId', itemIndex, ''));
	if (!userId) {
		throw new NodeOperationError(context.getNode(), 'User ID is empty', {
			itemIndex,
			description:
				'Set User ID to the person the memories belong to, e.g. {{ $json.userId ?? $json.sessionId }}.',
		});
	}
	const sessionId = textParameter(context.getNodeParameter('sessionId', itemIndex, ''));
	const options = context.getNodeParameter('options', itemIndex, {}) as MemoryOptions;
	const defaults = DEFAULT_MEMORY_SETTINGS;
	return {
		userId,
		sessionId: sessionId || undefined,
		scopeRecallToSession: context.getNodeParameter(
			'scopeRecallToSession',
			itemIndex,
			defaults.scopeRecallToSession,
		) as boolean,
		topK: context.getNodeParameter('topK', itemIndex, defaults.topK) as number,
		mode: options.mode ?? defaults.mode,
		rerank: options.rerank ?? defaults.rerank,
		memoryType: options.memoryType || undefined,
		contextFormat: options.contextFormat ?? defaults.contextFormat,
		contextRole: options.contextRole ?? defaults.contextRole,
		contextHeader: options.contextHeader?.trim() || defaults.contextHeader,
		memoryKey: options.memoryKey || defaults.memoryKey,
		inputKey: options.inputKey || defaults.inputKey,
		outputKey: options.outputKey || defaults.outputKey,
		returnMessages: options.returnMessages ?? defaults.returnMessages,
		persistTurns: options.persistTurns ?? defaults.persistTurns,
		project: options.project?.trim() || undefined,
		tags: splitList(options.tags),
		recallCacheTtlMs: options.recallCacheTtlMs ?? defaults.recallCacheTtlMs,
	};
}

export class CortadelMemory implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Cortadel Memory',
		name: 'cortadelMemory',
		icon: 'file:cortadel.svg',
		group: ['transform'],
		version: 1,
		description: 'Long-term memory for the AI Agent: recalls relevant facts each turn and stores new ones',
		defaults: { name: 'Cortadel Memory' },
		codex: {
			categories: ['AI'],
			subcategories: { AI: ['Memory'] },
			resources: {
				primaryDocumentation: [
					{ url: 'https://github.com/cortadel/cortadel/tree/main/integrations/n8n-nodes-cortadel' },
				],
			},
		},
		credentials: [{ name: CREDENTIAL_TYPE, required: true }],
		inputs: [],
		outputs: [NodeConnectionTypes.AiMemory],
		outputNames: ['Memory'],
		properties: memoryProperties,
	};

	async supplyData(this: ISupplyDataFunctions, itemIndex: number): Promise<SupplyData> {
		const settings = readMemorySettings(this, itemIndex);
		messageFactory ??= loadMessageFactory();
		const memory = new CortadelChatMemory(settings, createTransport(this), await messageFactory, {
			warn: (message) => this.logger.warn(message, { node: this.getNode().name }),
			logAction: (action, input) => {
				const { index } = this.addInputData(NodeConnectionTypes.AiMemory, [
					[{ json: { action, ...input } }],
				]);
				return (output: IDataObject) =>
					this.addOutputData(NodeConnectionTypes.AiMemory, index, [
						[{ json: { action, ...output } }],
					]);
			},
		});
		return { response: memory };
	}
}
