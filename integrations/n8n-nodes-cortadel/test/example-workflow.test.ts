import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import type {
	IConnections,
	INode,
	INodeProperties,
	INodeType,
	INodeTypeDescription,
	INodeTypes,
} from 'n8n-workflow';
import { deepCopy, NodeConnectionTypes, NodeHelpers, validateNodeCredentials, Workflow } from 'n8n-workflow';

import { Cortadel } from '../src/nodes/Cortadel/Cortadel.node';
import { CortadelMemory } from '../src/nodes/CortadelMemory/CortadelMemory.node';

const PACKAGE_DIR = join(__dirname, '..', '..');
const workflowJson = JSON.parse(
	readFileSync(join(PACKAGE_DIR, 'examples', 'agent-with-cortadel-memory.json'), 'utf8'),
) as { nodes: INode[]; connections: IConnections };

const PACKAGE_NAME = 'n8n-nodes-cortadel';

/**
 * The tool variant n8n derives from a `usableAsTool` node when it loads the package:
 * name + "Tool", no inputs, an ai_tool output, and a Description field (auto or manual).
 */
function asTool(node: INodeType): INodeType {
	const description = deepCopy(node.description);
	const descriptionType: INodeProperties = {
		displayName: 'Tool Description',
		name: 'descriptionType',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Set Automatically', value: 'auto' },
			{ name: 'Set Manually', value: 'manual' },
		],
		default: 'auto',
	};
	const toolDescription: INodeProperties = {
		displayName: 'Description',
		name: 'toolDescription',
		type: 'string',
		default: description.description,
		required: true,
		displayOptions: { show: { descriptionType: ['manual'] } },
	};
	return {
		description: {
			...description,
			name: `${description.name}Tool`,
			displayName: `${description.displayName} Tool`,
			inputs: [],
			outputs: [NodeConnectionTypes.AiTool],
			usableAsTool: undefined,
			properties: [descriptionType, toolDescription, ...description.properties],
		},
	};
}

/** Connection shape of the n8n nodes the example uses (their parameters are n8n's business). */
function hostNode(name: string, inputs: INodeTypeDescription['inputs'], outputs: INodeTypeDescription['outputs']): INodeType {
	return {
		description: {
			displayName: name,
			name,
			group: ['transform'],
			version: [1, 1.1, 1.2, 2],
			description: name,
			defaults: {},
			inputs,
			outputs,
			properties: [],
		},
	};
}

const ours: Record<string, INodeType> = {
	[`${PACKAGE_NAME}.cortadel`]: new Cortadel(),
	[`${PACKAGE_NAME}.cortadelTool`]: asTool(new Cortadel()),
	[`${PACKAGE_NAME}.cortadelMemory`]: new CortadelMemory(),
};

const types: Record<string, INodeType> = {
	...ours,
	'@n8n/n8n-nodes-langchain.chatTrigger': hostNode('chatTrigger', [], [NodeConnectionTypes.Main]),
	'@n8n/n8n-nodes-langchain.lmChatOpenAi': hostNode('lmChatOpenAi', [], [NodeConnectionTypes.AiLanguageModel]),
	'@n8n/n8n-nodes-langchain.agent': hostNode(
		'agent',
		[
			NodeConnectionTypes.Main,
			NodeConnectionTypes.AiLanguageModel,
			NodeConnectionTypes.AiMemory,
			NodeConnectionTypes.AiTool,
		],
		[NodeConnectionTypes.Main],
	),
};

const nodeTypes: INodeTypes = {
	getByName: (type) => types[type],
	getByNameAndVersion: (type) => types[type],
	getKnownTypes: () => ({}),
};

describe('examples/agent-with-cortadel-memory.json', () => {
	const workflow = new Workflow({
		id: 'example',
		nodes: deepCopy(workflowJson.nodes),
		connections: workflowJson.connections,
		active: false,
		nodeTypes,
	});

	it('uses only node types n8n can resolve, at versions the nodes declare', () => {
		for (const node of workflowJson.nodes) {
			const type = types[node.type];
			assert.ok(type, `unknown node type ${node.type}`);
			const versions = [type.description.version].flat();
			assert.ok(versions.includes(node.typeVersion), `${node.name}: version ${node.typeVersion}`);
			assert.match(node.id, /^[0-9a-f-]{36}$/);
			assert.equal(node.position.length, 2);
		}
		assert.deepEqual(
			workflowJson.nodes.filter((node) => node.type in ours).map((node) => node.name),
			['Cortadel Memory', 'Search Memories', 'Save Memory'],
		);
	});

	it('wires the chat trigger, model, Cortadel memory and Cortadel tools into the agent', () => {
		assert.deepEqual(workflow.getParentNodes('AI Agent', NodeConnectionTypes.Main, 1), ['When chat message received']);
		assert.deepEqual(workflow.getParentNodes('AI Agent', NodeConnectionTypes.AiLanguageModel, 1), ['OpenAI Chat Model']);
		assert.deepEqual(workflow.getParentNodes('AI Agent', NodeConnectionTypes.AiMemory, 1), ['Cortadel Memory']);
		assert.deepEqual(
			workflow.getParentNodes('AI Agent', NodeConnectionTypes.AiTool, 1).sort(),
			['Save Memory', 'Search Memories'],
		);
	});

	it('connects every node through an output type its node type declares', () => {
		for (const [source, byType] of Object.entries(workflowJson.connections)) {
			const node = workflow.getNode(source) as INode;
			const outputs = NodeHelpers.getConnectionTypes(
				NodeHelpers.getNodeOutputs(workflow, node, types[node.type].description),
			);
			for (const [connectionType, groups] of Object.entries(byType)) {
				assert.ok(outputs.includes(connectionType as never), `${source} has no ${connectionType} output`);
				for (const target of (groups ?? []).flat()) {
					const targetNode = workflow.getNode(target!.node) as INode;
					const inputs = NodeHelpers.getConnectionTypes(
						NodeHelpers.getNodeInputs(workflow, targetNode, types[targetNode.type].description),
					);
					assert.ok(inputs.includes(target!.type), `${target!.node} has no ${target!.type} input`);
				}
			}
		}
	});

	for (const node of workflowJson.nodes.filter((candidate) => candidate.type in ours)) {
		it(`${node.name}: every parameter is a known, displayed field and none is missing`, () => {
			const { description } = ours[node.type];
			const resolved = NodeHelpers.getNodeParameters(
				description.properties,
				node.parameters,
				true,
				false,
				node,
				description,
			);
			assert.ok(resolved);
			for (const [name, value] of Object.entries(node.parameters)) {
				assert.ok(name in resolved, `${name} is not a displayed parameter`);
				if (name === 'options') {
					const collection = description.properties.find(
						(property) => property.name === 'options' && NodeHelpers.displayParameter(resolved, property, node, description),
					);
					const known = (collection?.options ?? []).map((option) => option.name);
					for (const key of Object.keys(value as object)) assert.ok(known.includes(key), `unknown option ${key}`);
				}
			}
			// Issues are computed on the parameters with defaults applied, as the editor does.
			const complete = { ...node, parameters: resolved };
			assert.equal(NodeHelpers.getNodeParametersIssues(description.properties, complete, description), null);
		});
	}

	it('leaves only the Cortadel API credential to pick after import', () => {
		for (const node of workflowJson.nodes.filter((candidate) => candidate.type in ours)) {
			assert.deepEqual(
				validateNodeCredentials(node, ours[node.type]).map((issue) => [issue.type, issue.credentialName]),
				[['missing', 'cortadelApi']],
			);
		}
	});
});
