import type { IDataObject, INodeType, INodeTypes } from 'n8n-workflow';
import { Workflow } from 'n8n-workflow';

const anyNode: INodeType = {
	description: {
		displayName: 'Any',
		name: 'any',
		group: ['transform'],
		version: 1,
		description: '',
		defaults: {},
		inputs: [],
		outputs: [],
		properties: [],
	},
};

/** Evaluate a credential expression ('={{ $credentials... }}') the way n8n does, with n8n-workflow. */
export function resolveCredentialExpression(expression: string, credentials: IDataObject): unknown {
	const nodeTypes: INodeTypes = {
		getByName: () => anyNode,
		getByNameAndVersion: () => anyNode,
		getKnownTypes: () => ({}),
	};
	const workflow = new Workflow({
		nodes: [{ id: 'n', name: 'N', type: 'any', typeVersion: 1, position: [0, 0], parameters: {} }],
		connections: {},
		active: false,
		nodeTypes,
	});
	const node = workflow.getNode('N')!;
	return workflow.expression.getSimpleParameterValue(node, expression, 'internal', { $credentials: credentials }, undefined, '');
}
