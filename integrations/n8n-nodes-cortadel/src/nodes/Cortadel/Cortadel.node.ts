import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeError } from 'n8n-workflow';

import { CREDENTIAL_TYPE, createTransport } from '../../shared/transport';
import type { Operation } from './description';
import { actionProperties } from './description';
import { runOperation } from './operations';

export class Cortadel implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Cortadel',
		name: 'cortadel',
		icon: 'file:cortadel.svg',
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] + ": " + $parameter["resource"] }}',
		description: 'Store, search and manage long-term memories in Cortadel',
		defaults: { name: 'Cortadel' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: CREDENTIAL_TYPE, required: true }],
		properties: actionProperties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const send = createTransport(this);
		const returned: INodeExecutionData[] = [];
		const items = this.getInputData();
		for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
			const pairedItem = { item: itemIndex };
			try {
				const operation = this.getNodeParameter('operation', itemIndex) as Operation;
				const rows = await runOperation(operation, this, send, itemIndex);
				returned.push(...rows.map((json) => ({ json, pairedItem })));
			} catch (error) {
				const nodeError =
					error instanceof NodeError
						? error
						: new NodeApiError(this.getNode(), error as JsonObject, { itemIndex });
				if (!this.continueOnFail()) throw nodeError;
				returned.push({ json: { error: nodeError.message }, pairedItem });
			}
		}
		return [returned];
	}
}
