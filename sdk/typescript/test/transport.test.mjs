// Transport behaviour against local loopback servers: timeouts, aborts, unreachable hosts,
// non-JSON answers, error bodies, redirects. The real Cortadel server is covered in live.test.mjs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  CortadelAbortError,
  CortadelClient,
  CortadelConnectionError,
  CortadelError,
  CortadelTimeoutError,
} from "@cortadel/sdk";
import { localServer } from "./support.mjs";

describe("a server that never answers", () => {
  let silent;
  before(async () => {
    silent = await localServer(() => {
      /* hold the request open forever */
    });
  });
  after(() => silent.close());

  test("times out after timeoutMs with CortadelTimeoutError", async () => {
    const client = new CortadelClient({ baseUrl: silent.baseUrl, userId: "alice", timeoutMs: 150 });
    const started = Date.now();
    const error = await client.search("tea").then(
      () => assert.fail("search should have timed out"),
      (e) => e,
    );
    const elapsed = Date.now() - started;
    assert.ok(error instanceof CortadelTimeoutError);
    assert.ok(error instanceof CortadelError);
    assert.equal(error.status, 0);
    assert.equal(error.code, "timeout");
    assert.equal(error.timeoutMs, 150);
    assert.ok(elapsed >= 140 && elapsed < 3000, `timed out after ${elapsed} ms`);
  });

  test("an aborted signal rejects with CortadelAbortError, not a timeout", async () => {
    const client = new CortadelClient({ baseUrl: silent.baseUrl, userId: "alice", timeoutMs: 10_000 });
    const controller = new AbortController();
    const reason = new Error("user hit stop");
    setTimeout(() => controller.abort(reason), 50);
    const started = Date.now();
    const error = await client.list({}, controller.signal).then(
      () => assert.fail("list should have been aborted"),
      (e) => e,
    );
    assert.ok(Date.now() - started < 5000);
    assert.ok(error instanceof CortadelAbortError);
    assert.ok(!(error instanceof CortadelTimeoutError));
    assert.equal(error.code, "aborted");
    assert.equal(error.status, 0);
    assert.equal(error.cause, reason);
  });

  test("a signal that is already aborted never sends the request", async () => {
    const client = new CortadelClient({ baseUrl: silent.baseUrl, userId: "alice" });
    const before = silent.requests;
    await assert.rejects(client.health(AbortSignal.abort()), CortadelAbortError);
    assert.equal(silent.requests, before);
  });

  test("timeoutMs 0 disables the timeout; the caller's signal still works", async () => {
    const client = new CortadelClient({ baseUrl: silent.baseUrl, userId: "alice", timeoutMs: 0 });
    const error = await client.get("x", AbortSignal.timeout(300)).catch((e) => e);
    assert.ok(error instanceof CortadelAbortError, `got ${error}`);
  });
});

test("an unreachable server is a CortadelConnectionError", async () => {
  const closed = await localServer(() => {});
  const { baseUrl } = closed;
  await closed.close();
  const client = new CortadelClient({ baseUrl, userId: "alice" });
  const error = await client.health().catch((e) => e);
  assert.ok(error instanceof CortadelConnectionError);
  assert.equal(error.status, 0);
  assert.equal(error.code, "connection_error");
  assert.match(error.message, new RegExp(`Cannot reach Cortadel at ${baseUrl}`));
});

describe("answers that are not Cortadel JSON", () => {
  let server;
  before(async () => {
    server = await localServer((req, res) => {
      if (req.url.startsWith("/api/health")) {
        res.writeHead(200, { "content-type": "text/html" }).end("<html>proxy login</html>");
      } else if (req.url.startsWith("/api/v1/memories/search")) {
        res.writeHead(302, { location: "http://127.0.0.1:9/elsewhere" }).end();
      } else if (req.url.startsWith("/api/v1/memories/broken")) {
        res.writeHead(200, { "content-type": "application/json" }).end("{not json");
      } else {
        res.writeHead(200, { "content-type": "application/json" }).end("[1, 2]");
      }
    });
  });
  after(() => server.close());

  test("an HTML body is a transport error even with status 200", async () => {
    const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "alice" });
    const error = await client.health().catch((e) => e);
    assert.ok(error instanceof CortadelConnectionError);
    assert.equal(error.status, 200);
    assert.equal(error.code, "invalid_response");
    assert.match(error.message, /non-JSON body \(text\/html\)/);
  });

  test("redirects are not followed", async () => {
    const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "alice" });
    const error = await client.search("tea").catch((e) => e);
    assert.ok(error instanceof CortadelConnectionError);
    assert.equal(error.status, 302);
    assert.equal(server.requests > 0, true);
  });

  test("malformed JSON is a transport error", async () => {
    const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "alice" });
    const error = await client.get("broken").catch((e) => e);
    assert.ok(error instanceof CortadelConnectionError);
    assert.equal(error.code, "invalid_response");
    assert.ok(error.cause instanceof SyntaxError);
  });

  test("JSON of the wrong shape is a transport error", async () => {
    const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "alice" });
    const error = await client.list().catch((e) => e);
    assert.ok(error instanceof CortadelConnectionError);
    assert.equal(error.code, "invalid_response");
    assert.match(error.message, /GET \/api\/v1\/memories: expected a JSON object/);
  });
});

test("error bodies become CortadelError with the server's status, code, message and detail", async () => {
  const server = await localServer((req, res) => {
    const json = (status, body) =>
      res
        .writeHead(status, { "content-type": "application/problem+json", "x-request-id": "req-7" })
        .end(JSON.stringify(body));
    if (req.method === "DELETE") {
      json(500, { status: 500, code: "internal_error", message: "database is locked", detail: "trace-42" });
    } else {
      json(400, {
        type: "about:blank",
        title: "One or more validation errors occurred.",
        status: 400,
        errors: { top_k: ["must be between 1 and 50"] },
      });
    }
  });
  try {
    const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "alice" });
    const deleteError = await client.delete(["a"]).catch((e) => e);
    assert.equal(deleteError.constructor, CortadelError);
    assert.deepEqual(
      {
        status: deleteError.status,
        code: deleteError.code,
        message: deleteError.message,
        detail: deleteError.detail,
        requestId: deleteError.requestId,
      },
      { status: 500, code: "internal_error", message: "database is locked", detail: "trace-42", requestId: "req-7" },
    );
    const searchError = await client.search("tea", { topK: 99 }).catch((e) => e);
    assert.equal(searchError.status, 400);
    assert.equal(searchError.code, "validation_error");
    assert.equal(searchError.message, "One or more validation errors occurred. (top_k: must be between 1 and 50)");
  } finally {
    await server.close();
  }
});

test("health on a degraded server (503) is a result, not an error", async () => {
  const body = {
    status: "degraded",
    checked_at: "2026-11-30T03:00:00.000Z",
    checks: {
      memgraph: { ok: false, url: "sqlite:///data/cortadel.db", user: null, latency_ms: null, error: "disk I/O error" },
      embeddings: { ok: true, provider: "wordllama", model: "l2_supercat", dim: 256, latency_ms: 3, error: null },
      indexes: { ok: true, model: "wordllama/l2_supercat", provider_dim: 256, vector_indexes: ["v[256]"], mismatches: [], error: null },
    },
  };
  const server = await localServer((req, res) => {
    res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  try {
    const health = await new CortadelClient({ baseUrl: server.baseUrl, userId: "alice" }).health();
    assert.deepEqual(health, {
      status: "degraded",
      checkedAt: "2026-11-30T03:00:00.000Z",
      checks: {
        memgraph: { ok: false, url: "sqlite:///data/cortadel.db", user: null, latencyMs: null, error: "disk I/O error" },
        embeddings: { ok: true, provider: "wordllama", model: "l2_supercat", dim: 256, latencyMs: 3, error: null },
        indexes: { ok: true, model: "wordllama/l2_supercat", providerDim: 256, vectorIndexes: ["v[256]"], mismatches: [], error: null },
      },
    });
  } finally {
    await server.close();
  }
});
