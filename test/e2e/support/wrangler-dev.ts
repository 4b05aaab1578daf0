import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../../..");
const WRANGLER = join(ROOT, "node_modules/.bin/wrangler");
const QUIET_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", CI: "true" };

export interface DevServer {
  url: string;
  /** Everything wrangler printed so far, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

/** Applies the D1 migrations to the local state in `state`, as `npm run dev` does; throws with wrangler's output. */
export function applyLocalMigrations(wrangler: string, cwd: string, state: string, env: NodeJS.ProcessEnv): void {
  const migrate = spawnSync(wrangler, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state], {
    cwd,
    env,
    encoding: "utf8",
  });
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
}

/** The `wrangler dev` arguments of a local run in development mode on 127.0.0.1, with extra vars and flags. */
export function wranglerDevArgs(options: {
  port: number;
  state: string;
  vars?: Record<string, string>;
  extra?: string[];
}): string[] {
  // As `npm run dev`: the local queue hands the engine one message at a time, so one query per user in the engine
  // keeps a user's burst from queueing ahead of everyone else's.
  const local = { ENVIRONMENT: "development", QUERY_MAX_RUNNING_PER_USER: "1" };
  const vars = Object.entries({ ...local, ...options.vars }).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
  return [
    "dev",
    // The API Worker first (it serves the port), then the engine Worker that consumes the queue.
    "-c",
    "wrangler.toml",
    "-c",
    "wrangler.engine.toml",
    "--ip",
    "127.0.0.1",
    "--port",
    String(options.port),
    "--persist-to",
    options.state,
    "--show-interactive-dev-session=false",
    ...(options.extra ?? []),
    ...vars,
  ];
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * Starts `wrangler dev` as a user would (`npm run dev`), with fresh local
 * state: migrations applied first, development mode on, on a free port.
 */
export async function startWranglerDev(vars: Record<string, string> = {}): Promise<DevServer> {
  const state = mkdtempSync(join(tmpdir(), "dqs-e2e-"));
  applyLocalMigrations(WRANGLER, ROOT, state, QUIET_ENV);
  const port = await freePort();
  const child: ChildProcess = spawn(WRANGLER, wranglerDevArgs({ port, state, vars }), {
    cwd: ROOT,
    env: QUIET_ENV,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;

  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited early:\n${log}`);
    try {
      const response = await fetch(`${url}/v1/openapi.json`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`wrangler dev did not become ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 250));
  }

  return {
    url,
    output: () => log,
    async stop() {
      if (child.exitCode === null && child.pid) {
        const exited = new Promise((r) => child.once("exit", r));
        process.kill(-child.pid, "SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
      }
      rmSync(state, { recursive: true, force: true });
    },
  };
}
