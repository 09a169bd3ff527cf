import type { ChatMessageLike } from './messages';
import { messageType, textOf } from './turnText';

/**
 * Chat history view handed to hosts that talk to `memory.chatHistory` directly. Cortadel is
 * not a transcript store, so there is nothing to read back; writes become persisted turns.
 */
export class CortadelChatHistory {
	constructor(
		private readonly persist: (input: string, output: string) => Promise<void>,
		private readonly dropCache: () => void,
	) {}

	async getMessages(): Promise<ChatMessageLike[]> {
		return [];
	}

	async addMessage(message: unknown): Promise<void> {
		await this.addMessages([message]);
	}

	/**
	 * n8n's agent saves tool-using turns here instead of through `saveContext`. Only the human
	 * input and the final answer are worth distilling; tool calls and results are skipped.
	 */
	async addMessages(messages: unknown[]): Promise<void> {
		const input = messages
			.filter((message) => messageType(message) === 'human')
			.map(textOf)
			.filter(Boolean)
			.join('\n');
		const answers = messages.filter((message) => {
			const toolCalls = (message as { tool_calls?: unknown[] }).tool_calls;
			return messageType(message) === 'ai' && !(toolCalls?.length);
		});
		await this.persist(input, textOf(answers[answers.length - 1]));
	}

	async addUserMessage(text: string): Promise<void> {
		await this.persist(text, '');
	}

	async addAIMessage(text: string): Promise<void> {
		await this.persist('', text);
	}

	/** Older LangChain name for {@link addAIMessage}. */
	async addAIChatMessage(text: string): Promise<void> {
		await this.addAIMessage(text);
	}

	async clear(): Promise<void> {
		this.dropCache();
	}
}
