// Starts a real Cortadel server (the Python package from this repo) on a free loopback port
// for Node test suites. One mechanism for every JS package: import { startServer } from here.
// The child binds port 0 and writes the port it got to a file (`serve --port-file`), as
// cortadel_server.testing does, so no port is picked here and then taken by another process.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, readFileSync } from "node:fs";
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

/**
 * Start `cortadel serve` on 127.0.0.1 with a fresh SQLite file.
 * @param {{ env?: Record<string,string>, timeoutMs?: number }} [options]
 * @returns {Promise<{ baseUrl: string, port: number, dataDir: string, stop: () => Promise<void> }>}
 */
export async function startServer(options = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "cortadel-test-"));
  const portFile = join(dataDir, "port");
  const child = spawn(
    pythonExecutable(),
    ["-m", "cortadel_server", "serve", "--host", "127.0.0.1", "--port", "0", "--port-file", portFile, "--data", join(dataDir, "cortadel.db")],
    { env: { ...process.env, CORTADEL_LOG_LEVEL: "warning", ...(options.env ?? {}) }, stdio: ["ignore", "inherit", "inherit"] },
  );
  const deadline = Date.now() + (options.timeoutMs ?? 60000);
  let exited = null;
  child.on("exit", (code) => { exited = code; });
  // The file appears once the app has started and its socket accepts connections.
  while (!existsSync(portFile)) {
    if (exited !== null) throw new Error(`cortadel serve exited with code ${exited} before it was ready`);
    if (Date.now() > deadline) { child.kill("SIGKILL"); throw new Error("cortadel serve did not become ready in time"); }
    await new Promise((r) => setTimeout(r, 50));
  }
  const port = Number(readFileSync(portFile, "utf8"));
  const baseUrl = `http://127.0.0.1:${port}`;
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
