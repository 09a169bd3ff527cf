import type { ChatMessageLike, ContextRole, MessageFactory } from './messages';

/** One memory chosen for injection. */
export interface RecalledFact {
	id: string;
	text: string;
}

export type ContextFormat = 'block' | 'messages';

export const DEFAULT_CONTEXT_HEADER =
	'Background from long-term memory (facts saved in earlier conversations, not part of the current message). Use them where they help:';

/** Prefix of each message in the one-message-per-fact format. */
export const FACT_PREFIX = 'From long-term memory: ';

const normalise = (text: string): string => text.replace(/\s+/g, ' ').trim().toLowerCase();

/** Keep the first occurrence of each memory, comparing by id and by (normalised) text. */
export function dedupeFacts(facts: RecalledFact[]): RecalledFact[] {
	const ids = new Set<string>();
	const texts = new Set<string>();
	const kept: RecalledFact[] = [];
	for (const fact of facts) {
		const text = normalise(fact.text);
		if (!text || (fact.id && ids.has(fact.id)) || texts.has(text)) continue;
		if (fact.id) ids.add(fact.id);
		texts.add(text);
		kept.push({ id: fact.id, text: fact.text.trim() });
	}
	return kept;
}

/** The block format: a header line, then one bullet per fact. */
export function renderBlock(facts: RecalledFact[], header: string): string {
	return [header, ...facts.map((fact) => `- ${fact.text}`)].join('\n');
}

export interface ContextStyle {
	format: ContextFormat;
	role: ContextRole;
	header: string;
}

/** Turn recalled facts into the messages placed in the agent's chat history. */
export function renderMessages(
	facts: RecalledFact[],
	style: ContextStyle,
	factory: MessageFactory,
): ChatMessageLike[] {
	if (facts.length === 0) return [];
	if (style.format === 'block') return [factory.create(style.role, renderBlock(facts, style.header))];
	return facts.map((fact) => factory.create(style.role, `${FACT_PREFIX}${fact.text}`));
}

/** The same context as one string, for memories configured not to return message objects. */
export function renderText(facts: RecalledFact[], style: ContextStyle): string {
	if (facts.length === 0) return '';
	if (style.format === 'block') return renderBlock(facts, style.header);
	return facts.map((fact) => `${FACT_PREFIX}${fact.text}`).join('\n');
}
