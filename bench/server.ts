/**
 * Starts the local service as `npm run dev` does (`startLocalService` in
 * src/local/services.ts: the API, engine and table store Workers in three
 * `wrangler dev` processes sharing one local state), with fresh local state,
 * from a snapshot of the project, and keeps the processes' ids, to find the
 * workerd processes and read their memory, and their inspector ports.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, startLocalService, type WorkerName } from "../src/local/services.ts";

export { freePort, type WorkerName };

export const ROOT = resolve(import.meta.dirname, "..");

/** wrangler's environment when run from `dir`: quiet, with a dev registry of its own. */
function wranglerEnv(dir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // The project's own Node (node_modules/.bin/node, 24) first, as under npm scripts: wrangler needs ≥ 22.
    PATH: `${join(dir, "node_modules/.bin")}:${process.env.PATH ?? ""}`,
    // Other sessions' `wrangler dev` register in the shared registry under the same Worker names; the three
    // processes of this run must find each other only.
    WRANGLER_REGISTRY_PATH: join(dir, ".wrangler-registry"),
    WRANGLER_SEND_METRICS: "false",
    NO_COLOR: "1",
    CI: "true",
  };
}

/** Applies the D1 migrations to the local state in `state`, as `npm run dev` does; throws with wrangler's output. */
function applyLocalMigrations(wrangler: string, cwd: string, state: string, env: NodeJS.ProcessEnv): void {
  const migrate = spawnSync(wrangler, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state], {
    cwd,
    env,
    encoding: "utf8",
  });
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
}

export interface DevServer {
  url: string;
  /** The copy of the project wrangler runs from. */
  snapshot: string;
  /**
   * Process ids of the three `wrangler dev` processes (API `wrangler.toml`, engine `wrangler.engine.toml`,
   * table stores `wrangler.store.toml`), each the leader of its own process group; the store's changes when
   * it is restarted.
   */
  pids(): Record<WorkerName, number | undefined>;
  /**
   * Ports of each process's DevTools inspector (wrangler's inspector proxy, which relays to that process's one
   * Worker: `dqs`, `dqs-engine`, `dqs-store`).
   */
  inspectorPorts(): Record<WorkerName, number | undefined>;
  /** How often the table store process was restarted after a statement held it past the time limit. */
  storeRestarts(): number;
  output(): string;
  stop(): Promise<void>;
}

/**
 * A copy of what wrangler builds from (src, migrations, configuration, and
 * node_modules as hard links), in a temporary folder. `wrangler dev` rebuilds
 * and restarts the Worker whenever a file of its bundle changes — and esbuild
 * also watches files it merely read while resolving, such as the project's
 * package.json above node_modules — answering requests meanwhile with 503
 * "Your worker restarted mid-request". A bench must measure one version of
 * the code even while people edit the work tree or install packages.
 */
function snapshotProject(): string {
  const dir = mkdtempSync(join(tmpdir(), "dqs-bench-src-"));
  // dist/web: the static assets wrangler.toml serves ([assets]; built by npm ci, or npm run build:web).
  const entries = [
    "src",
    "migrations",
    "dist/web",
    "wrangler.toml",
    "wrangler.engine.toml",
    "wrangler.store.toml",
    "package.json",
    "tsconfig.json",
  ];
  for (const entry of entries)
    if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  // Hard links: instant and no space, and every path esbuild resolves stays inside the snapshot.
  const linked = spawnSync("cp", ["-al", join(ROOT, "node_modules"), join(dir, "node_modules")], { encoding: "utf8" });
  if (linked.status !== 0) {
    rmSync(join(dir, "node_modules"), { recursive: true, force: true });
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  }
  return dir;
}

/** Process groups of the wrangler instances started here and not yet stopped (the service's, as they are now). */
const started = new Set<() => (number | undefined)[]>();

/** Kills every wrangler started here at once (for an interrupted or crashing bench). */
export function killAllStarted(): void {
  for (const groups of started) {
    for (const group of groups()) {
      if (!group) continue;
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  started.clear();
}

export async function startWranglerDev(vars: Record<string, string> = {}): Promise<DevServer> {
  const snapshot = snapshotProject();
  const state = join(snapshot, ".bench-state");
  const wrangler = join(snapshot, "node_modules/.bin/wrangler");
  const env = wranglerEnv(snapshot);
  let log = "";
  try {
    applyLocalMigrations(wrangler, snapshot, state, env);
    const service = await startLocalService({
      cwd: snapshot,
      env,
      state,
      vars,
      onOutput: (worker, text) => (log += worker === "api" ? text : text.replace(/^(?=.)/gm, `[${worker}] `)),
    });
    const groups = () => Object.values(service.pids());
    started.add(groups);
    return {
      url: service.url,
      snapshot,
      pids: () => service.pids(),
      inspectorPorts: () => service.inspectorPorts(),
      storeRestarts: () => service.storeRestarts(),
      output: () => log,
      async stop() {
        await service.stop();
        started.delete(groups);
        rmSync(snapshot, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(snapshot, { recursive: true, force: true });
    throw new Error(
      `the local service did not start (${error instanceof Error ? error.message : String(error)}):\n${log}`,
    );
  }
}

/** A `wrangler dev` started by the bench: its URL, process group, log and how to stop it. */
interface RunningWrangler {
  url: string;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Spawns `wrangler dev` in a process group of its own, collects its log,
 * and waits until `ready` says it answers; `stop` ends the group (SIGTERM,
 * then SIGKILL after 5 s) and runs `cleanUp`.
 */
async function runWranglerDev(options: {
  wrangler: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  url: string;
  ready(url: string): Promise<boolean>;
  name: string;
  timeoutMs: number;
  cleanUp(): void;
}): Promise<RunningWrangler> {
  const { url, name } = options;
  const child: ChildProcess = spawn(options.wrangler, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const groups = () => [child.pid];
  started.add(groups);
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null)
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
    }
    started.delete(groups);
    options.cleanUp();
  };
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`${name} exited early:\n${log}`);
    }
    try {
      if (await options.ready(url)) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not become ready:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, pid: child.pid!, output: () => log, stop };
}

interface ProcInfo {
  pid: number;
  ppid: number;
  comm: string;
}

function processes(): ProcInfo[] {
  const list: ProcInfo[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid ...; comm may hold spaces and parentheses.
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      list.push({ pid: Number(entry), ppid, comm });
    } catch {
      // gone meanwhile
    }
  }
  return list;
}

/** Descendants of `root` whose command name starts with `name`. */
export function findDescendants(root: number, name: string): ProcInfo[] {
  const all = processes();
  const children = new Map<number, ProcInfo[]>();
  for (const p of all) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const found: ProcInfo[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    for (const child of children.get(pid) ?? []) {
      if (child.comm.startsWith(name)) found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM); null when the process is gone. */
export function procStatusBytes(pid: number, field: "VmRSS" | "VmHWM"): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Resets the process's peak RSS (VmHWM) to its current RSS; needs to own the process (or root). */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

export interface RssReport {
  /** RSS before, bytes. */
  baseline: number;
  /** Highest sampled RSS, bytes. */
  peakSampled: number;
  /** VmHWM after the measured work (after a reset when that worked), bytes; null when the reset failed. */
  peakHwm: number | null;
  /** Peak minus baseline, bytes (the higher of HWM and the samples). */
  delta: number;
  samples: number;
  /** A process went away meanwhile (wrangler restarted workerd): the figures mean nothing. */
  lost: boolean;
}

/**
 * Samples the summed RSS of `pids` every `everyMs` while `work` runs; also
 * resets and reads VmHWM for an exact peak between samples.
 */
export async function measureRss<T>(
  pids: number[],
  work: () => Promise<T>,
  everyMs = 10,
): Promise<{ value: T; rss: RssReport }> {
  const total = () => pids.reduce((sum, pid) => sum + (procStatusBytes(pid, "VmRSS") ?? 0), 0);
  const reset = pids.every((pid) => resetPeakRss(pid));
  const baseline = total();
  let peakSampled = baseline;
  let samples = 1;
  const timer = setInterval(() => {
    peakSampled = Math.max(peakSampled, total());
    samples++;
  }, everyMs);
  try {
    const value = await work();
    peakSampled = Math.max(peakSampled, total());
    // With several processes the sum of their peaks bounds the peak of the sum from above.
    const peakHwm = reset ? pids.reduce((sum, pid) => sum + (procStatusBytes(pid, "VmHWM") ?? 0), 0) : null;
    const peak = Math.max(peakHwm ?? 0, peakSampled);
    const lost = pids.some((pid) => procStatusBytes(pid, "VmRSS") === null);
    return { value, rss: { baseline, peakSampled, peakHwm, delta: peak - baseline, samples, lost } };
  } finally {
    clearInterval(timer);
  }
}

/** The `--var NAME=VALUE` options of a bench, as wrangler dev vars. */
export function varsFromOptions(options: string[]): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const option of options) {
    const at = option.indexOf("=");
    if (at < 1) throw new Error(`--var wants NAME=VALUE, not ${option}`);
    vars[option.slice(0, at)] = option.slice(at + 1);
  }
  return vars;
}

/** The upload floor's Worker (bench/floor), running under its own `wrangler dev`. */
export interface FloorServer {
  url: string;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts the upload floor: `wrangler dev` on bench/floor/wrangler.jsonc (a bare Worker that pipes the request body
 * into local R2), copied to a temporary folder with fresh state, on 127.0.0.1 and a free port. It is a workerd
 * process of its own: while the bench uploads to it, dqs's workerd is idle (and the other way round).
 */
export async function startFloorWorker(): Promise<FloorServer> {
  const dir = mkdtempSync(join(tmpdir(), "dqs-bench-floor-"));
  for (const entry of ["worker.ts", "wrangler.jsonc"]) cpSync(join(ROOT, "bench/floor", entry), join(dir, entry));
  const wrangler = join(ROOT, "node_modules/.bin/wrangler");
  const port = await freePort();
  const inspectorPort = await freePort();
  return runWranglerDev({
    wrangler,
    args: [
      "dev",
      "-c",
      "wrangler.jsonc",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspectorPort),
      "--persist-to",
      join(dir, ".state"),
      "--show-interactive-dev-session=false",
    ],
    cwd: dir,
    env: wranglerEnv(ROOT),
    url: `http://127.0.0.1:${port}`,
    // A GET answers 405: the Worker is up.
    ready: async (url) => (await fetch(url)).status === 405,
    name: "the floor Worker's wrangler dev",
    timeoutMs: 60_000,
    cleanUp: () => rmSync(dir, { recursive: true, force: true }),
  });
}
