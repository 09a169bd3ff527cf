import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import * as source from "../src/index.js";

const PUBLIC_VALUES = [
  "CortadelClientPool",
  "CortadelMemoryProcessor",
  "DEFAULT_MEMORY_HEADER",
  "MAX_CACHED_CLIENTS",
  "UnresolvedUserError",
  "cortadelMemory",
  "createCortadelTools",
];

describe("public surface", () => {
  it("exports exactly the documented values", () => {
    expect(Object.keys(source).sort()).toEqual(PUBLIC_VALUES);
  });

  it("ships the same surface as ESM and CommonJS (after `npm run build`)", async () => {
    const esm = await import("../dist/index.js");
    const cjs = createRequire(import.meta.url)("../dist/index.cjs") as typeof esm;
    expect(Object.keys(esm).sort()).toEqual(PUBLIC_VALUES);
    expect(Object.keys(cjs).sort()).toEqual(PUBLIC_VALUES);
    expect(new cjs.CortadelMemoryProcessor().id).toBe("cortadel-memory");
    expect(Object.keys(esm.cortadelMemory().tools)).toEqual(["search_memory", "add_memories"]);
  });
});
