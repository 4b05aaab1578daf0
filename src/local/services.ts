/**
 * The local service as `npm run dev` runs it: the API, the engine's two
 * lanes and the table stores in four `wrangler dev` processes sharing one
 * local state (D1, R2, queues and Durable Objects reach each other through
 * wrangler's dev registry).
 *
 * workerd runs all the Workers of one process on one thread, and a SQLite
 * statement cannot be interrupted, so a long statement would hold every
 * request of its process. Apart, the API answers while the engine or a
 * table store works, and the quick lane's short queries never wait behind
 * the long lane's. A table store held by one statement past the query time
 * limit is restarted, as a deployed object past its CPU limit is reset.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

export type WorkerName = "api" | "engine" | "engine-long" | "store";

/** Each process's configuration (and environment): the long lane is the engine deployed again (`--env long`). */
const CONFIGS: Record<WorkerName, string[]> = {
  api: ["-c", "wrangler.toml"],
  engine: ["-c", "wrangler.engine.toml"],
  "engine-long": ["-c", "wrangler.engine.toml", "--env", "long"],
  store: ["-c", "wrangler.store.toml"],
};
/** The API Worker's settings a local run always has: development mode; one query per user in the engine. */
export const LOCAL_VARS = { ENVIRONMENT: "development", QUERY_MAX_RUNNING_PER_USER: "1" };
/** A store not answering for the time limit plus this is held by a statement no query may run that long. */
const STORE_STUCK_MARGIN_MS = 5_000;
const LIVENESS_EVERY_MS = 1_000;
const LIVENESS_PATH = "/.dqs-liveness";

export interface LocalServiceOptions {
  /** The project folder wrangler runs from. */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Where the API answers; without it, a free port. */
  port?: number;
  /** The local state folder (--persist-to) the processes share. */
  state: string;
  /** The API Worker's vars beyond LOCAL_VARS. */
  vars?: Record<string, string>;
  /** More `wrangler dev` arguments for the API process. */
  apiArgs?: string[];
  /** Each process's output, as it comes. */
  onOutput?: (worker: WorkerName, text: string) => void;
  /** The API or the engine process ended by itself (the service is then stopped: it cannot work without it). */
  onFailure?: (worker: WorkerName) => void;
}

export interface LocalService {
  url: string;
  /** Process ids of the `wrangler dev` processes (each the leader of its own group). */
  pids(): Record<WorkerName, number | undefined>;
  /** Ports of the DevTools inspector of each process (the store's changes when it is restarted). */
  inspectorPorts(): Record<WorkerName, number | undefined>;
  /** How often the table store process was restarted after a statement held it past the time limit. */
  storeRestarts(): number;
  stop(): Promise<void>;
}

/** Starts the processes and resolves once the API answers; throws with their output if one fails first. */
export async function startLocalService(options: LocalServiceOptions): Promise<LocalService> {
  const vars = { ...LOCAL_VARS, ...options.vars };
  const timeLimitMs = timeLimitSeconds(options.cwd, vars) * 1000;
  const ports: Record<WorkerName, number> = { api: options.port ?? 0, engine: 0, "engine-long": 0, store: 0 };
  const children = new Map<WorkerName, ChildProcess>();
  const inspectors = new Map<WorkerName, number>();
  let stopping = false;
  let restarts = 0;
  let watch: ReturnType<typeof setInterval> | undefined;

  const args = (worker: WorkerName, inspectorPort: number): string[] => [
    "dev",
    ...CONFIGS[worker],
    "--ip",
    "127.0.0.1",
    "--port",
    String(ports[worker]),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    options.state,
    "--show-interactive-dev-session=false",
    ...(worker === "api"
      ? [...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]), ...(options.apiArgs ?? [])]
      : []),
  ];
  /** Starts one process; resolves once it answers, or throws with why it could not. */
  const launch = async (worker: WorkerName) => {
    // A port found free can be taken before wrangler binds it (by another run, or wrangler's own sockets): try others.
    for (let attempt = 1; ; attempt++) {
      if (worker !== "api" || options.port === undefined) ports[worker] = await freePort();
      inspectors.set(worker, await freePort());
      let said = "";
      const child = spawn(join(options.cwd, "node_modules/.bin/wrangler"), args(worker, inspectors.get(worker)!), {
        cwd: options.cwd,
        env: options.env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      children.set(worker, child);
      // wrangler logs every request; the liveness checks would drown the rest.
      const output = (chunk: Buffer) => {
        const text = chunk.toString().replace(new RegExp(`^.*${LIVENESS_PATH}.*\\n`, "gm"), "");
        said += text;
        if (text) options.onOutput?.(worker, text);
      };
      child.stdout?.on("data", output);
      child.stderr?.on("data", output);
      try {
        await until(async () => {
          if (child.exitCode !== null) throw new Error(`the ${worker} Worker's wrangler dev exited early`);
          return readiness[worker]();
        }, 120_000);
      } catch (error) {
        const portTaken = /Address already in use/i.test(said);
        await endGroup(child);
        if (portTaken && attempt < 3 && (worker !== "api" || options.port === undefined)) continue;
        throw error;
      }
      // The store is restarted when it stops answering; without the API or the engine nothing works.
      if (worker !== "store")
        child.once("exit", () => {
          if (stopping) return;
          void stop().then(() => options.onFailure?.(worker));
        });
      return;
    }
  };

  const stop = async () => {
    stopping = true;
    clearInterval(watch);
    await Promise.all([...children.values()].map(endGroup));
  };

  const apiUrl = () => `http://127.0.0.1:${ports.api}`;
  // One at a time: processes opening the shared local state at once can find its databases locked.
  const readiness: Record<WorkerName, () => Promise<boolean>> = {
    store: () => answers(`http://127.0.0.1:${ports.store}${LIVENESS_PATH}`),
    engine: () => answers(`http://127.0.0.1:${ports.engine}/`, 2_000, false),
    "engine-long": () => answers(`http://127.0.0.1:${ports["engine-long"]}/`, 2_000, false),
    api: () => answers(`${apiUrl()}/v1/openapi.json`),
  };
  try {
    for (const worker of ["store", "engine", "engine-long", "api"] as const) await launch(worker);
  } catch (error) {
    await stop();
    throw error;
  }

  // The store's liveness: a process that has not answered for the time limit plus a margin is restarted.
  let storeAnsweredAt = Date.now();
  let checking = false;
  watch = setInterval(async () => {
    if (checking || stopping) return;
    checking = true;
    try {
      if (await answers(`http://127.0.0.1:${ports.store}${LIVENESS_PATH}`, LIVENESS_EVERY_MS))
        storeAnsweredAt = Date.now();
      else if (Date.now() - storeAnsweredAt > timeLimitMs + STORE_STUCK_MARGIN_MS && !stopping) {
        restarts++;
        options.onOutput?.(
          "store",
          `[dqs] The table store process answered nothing for over ${Math.round((Date.now() - storeAnsweredAt) / 1000)} s (the query time limit is ${timeLimitMs / 1000} s): a statement held it. Restarting it.\n`,
        );
        await endGroup(children.get("store")!);
        if (!stopping) await launch("store").catch((error) => options.onOutput?.("store", `[dqs] ${String(error)}\n`));
        storeAnsweredAt = Date.now();
      }
    } finally {
      checking = false;
    }
  }, LIVENESS_EVERY_MS);

  return {
    url: apiUrl(),
    pids: () => ({
      api: children.get("api")?.pid,
      engine: children.get("engine")?.pid,
      "engine-long": children.get("engine-long")?.pid,
      store: children.get("store")?.pid,
    }),
    inspectorPorts: () => ({
      api: inspectors.get("api"),
      engine: inspectors.get("engine"),
      "engine-long": inspectors.get("engine-long"),
      store: inspectors.get("store"),
    }),
    storeRestarts: () => restarts,
    stop,
  };
}

/** QUERY_TIME_LIMIT_SECONDS as the API Worker will have it: a --var given, else wrangler.toml's. */
function timeLimitSeconds(cwd: string, vars: Record<string, string>): number {
  const given = Number(vars.QUERY_TIME_LIMIT_SECONDS);
  if (given > 0) return given;
  const configured = readFileSync(join(cwd, "wrangler.toml"), "utf8").match(/^QUERY_TIME_LIMIT_SECONDS\s*=\s*"(\d+)"/m);
  return Number(configured?.[1] ?? 120);
}

/** Ends a process group: SIGTERM, then SIGKILL after 5 s. */
async function endGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // already gone
    }
  };
  signal("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  if (child.exitCode === null && child.signalCode === null) signal("SIGKILL");
}

/** Whether `url` answers (with a 2xx, unless any answer will do) within `timeoutMs`. */
async function answers(url: string, timeoutMs = 2_000, okOnly = true): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.ok || !okOnly;
  } catch {
    return false;
  }
}

async function until(ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`the local service did not become ready in ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
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
