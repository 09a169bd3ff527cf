// Starts a real Cortadel server (the Python package from this repo) on a free loopback port
// for Node test suites. One mechanism for every JS package: import { startServer } from here.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function pythonExecutable() {
  if (process.env.CORTADEL_PYTHON) return process.env.CORTADEL_PYTHON;
  const venv = join(repoRoot, ".venv", "bin", "python");
  if (existsSync(venv)) return venv;
  return "python3";
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

/**
 * Start `cortadel serve` on 127.0.0.1 with a fresh SQLite file.
 * @param {{ env?: Record<string,string>, timeoutMs?: number }} [options]
 * @returns {Promise<{ baseUrl: string, port: number, dataDir: string, stop: () => Promise<void> }>}
 */
export async function startServer(options = {}) {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "cortadel-test-"));
  const child = spawn(
    pythonExecutable(),
    ["-m", "cortadel_server", "serve", "--host", "127.0.0.1", "--port", String(port), "--data", join(dataDir, "cortadel.db")],
    { env: { ...process.env, CORTADEL_LOG_LEVEL: "warning", ...(options.env ?? {}) }, stdio: ["ignore", "inherit", "inherit"] },
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 60000);
  let exited = null;
  child.on("exit", (code) => { exited = code; });
  for (;;) {
    if (exited !== null) throw new Error(`cortadel serve exited with code ${exited} before it was ready`);
    try {
      const res = await fetch(`${baseUrl}/api/health`);
      if (res.status === 200 || res.status === 503) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) { child.kill("SIGKILL"); throw new Error("cortadel serve did not become ready in time"); }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl,
    port,
    dataDir,
    async stop() {
      if (exited === null) {
        const done = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await Promise.race([done, new Promise((r) => setTimeout(r, 5000))]);
        if (exited === null) child.kill("SIGKILL");
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
