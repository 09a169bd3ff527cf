/** Reading text out of the values and messages LangChain hands a memory. */

/** Text of a turn value: a string, a message-like object, or a list of content blocks. */
export function textOf(value: unknown): string {
	if (typeof value === 'string') return value.trim();
	if (Array.isArray(value)) {
		return value
			.map((block) => (typeof block === 'string' ? block : textOf((block as { text?: unknown })?.text)))
			.filter(Boolean)
			.join('\n')
			.trim();
	}
	if (typeof value === 'object' && value !== null && 'content' in value) {
		return textOf(value.content);
	}
	return '';
}

/** A message's LangChain type ("human", "ai", "tool", …), from `_getType()` or `type`. */
export function messageType(message: unknown): string {
	const candidate = message as { _getType?: () => string; type?: string } | null;
	if (typeof candidate?._getType === 'function') return candidate._getType();
	return typeof candidate?.type === 'string' ? candidate.type : '';
}
