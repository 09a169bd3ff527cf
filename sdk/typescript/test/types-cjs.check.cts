// Compile-time check that the CommonJS declarations resolve through `require`.
import sdk = require("@cortadel/sdk");

const client: sdk.CortadelClient = new sdk.CortadelClient({ userId: "alice" });
export const pending: Promise<sdk.MemoryPage> = client.list({ page: 2 });
export const isError: boolean = new sdk.CortadelAbortError() instanceof sdk.CortadelError;
