import type { MastraDBMessage, MessageList } from "@mastra/core/agent/message-list";

/** The text of a message: its text parts joined, or its legacy string content. */
export function textOf(message: MastraDBMessage): string {
  const parts = message.content?.parts ?? [];
  const texts = parts.flatMap((part) => (part.type === "text" ? [part.text] : []));
  if (texts.length > 0) return texts.join("\n").trim();
  const legacy = message.content?.content;
  return typeof legacy === "string" ? legacy.trim() : "";
}

/** The text of the newest message with `role`, or `""`. */
export function newestText(messages: readonly MastraDBMessage[], role: MastraDBMessage["role"]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === role) {
      const text = textOf(message);
      if (text !== "") return text;
    }
  }
  return "";
}

/** What the user just said: the MessageList's own answer, else the newest user message's text. */
export function latestUserText(messageList: MessageList | undefined, messages: readonly MastraDBMessage[]): string {
  const latest = messageList?.getLatestUserContent?.();
  if (typeof latest === "string" && latest.trim() !== "") return latest.trim();
  return newestText(messageList?.get.all.db() ?? messages, "user");
}

/** Everything the assistant said in `messages`, in order. */
export function assistantText(messages: readonly MastraDBMessage[]): string {
  return messages
    .filter((message) => message.role === "assistant")
    .map(textOf)
    .filter((text) => text !== "")
    .join("\n");
}
