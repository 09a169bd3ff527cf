// Shared test helpers: the real Cortadel server, local stand-in HTTP servers, a recording fetch.
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export { startServer } from "../../../tools/test-server.mjs";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** A bearer key for `userId`, minted by the server CLI with the same auth secret. */
export function mintKey(userId, env) {
  const python = process.env.CORTADEL_PYTHON ?? join(repoRoot, ".venv", "bin", "python");
  return execFileSync(python, ["-m", "cortadel_server", "mint-key", userId], {
    env: { ...process.env, ...env },
    encoding: "utf8",
  }).trim();
}

/**
 * A loopback HTTP server answering every request with `handler(req, res)`.
 * Returns `{ baseUrl, requests, close }`; `requests` counts requests received.
 */
export async function localServer(handler) {
  const sockets = new Set();
  const state = { requests: 0 };
  const server = createServer((req, res) => {
    state.requests += 1;
    handler(req, res);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}`,
    get requests() {
      return state.requests;
    },
    close: () =>
      new Promise((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(done);
      }),
  };
}

/** A `fetch` that records each request's method, URL and decoded JSON body, then really sends it. */
export function recordingFetch() {
  const sent = [];
  const record = async (input, init = {}) => {
    sent.push({
      method: init.method,
      url: new URL(String(input)),
      headers: { ...init.headers },
      body: init.body === undefined ? undefined : JSON.parse(init.body),
    });
    return fetch(input, init);
  };
  return { fetch: record, sent, last: () => sent[sent.length - 1] };
}
