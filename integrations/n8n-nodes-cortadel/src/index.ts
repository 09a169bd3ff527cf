/** The package's public surface: the n8n node and credential classes, and the memory they supply. */
export { CortadelApi } from './credentials/CortadelApi.credentials';
export type { MemoryHooks, MemorySettings } from './memory/CortadelChatMemory';
export { CortadelChatMemory, DEFAULT_MEMORY_SETTINGS } from './memory/CortadelChatMemory';
export { Cortadel } from './nodes/Cortadel/Cortadel.node';
export { CortadelMemory } from './nodes/CortadelMemory/CortadelMemory.node';
export { APP_NAME } from './shared/transport';
