import type { NodeParameterValueType } from 'n8n-workflow';

/**
 * A text field's value, trimmed. An expression may evaluate to a number or a boolean, which reads
 * as its text; an object or a list is no text at all (not "[object Object]").
 */
export function textParameter(value: NodeParameterValueType | object): string {
	if (typeof value === 'string') return value.trim();
	if (typeof value === 'number' || typeof value === 'boolean') return String(value);
	return '';
}
