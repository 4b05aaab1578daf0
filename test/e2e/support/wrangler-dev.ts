import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, startLocalService, type LocalService } from "../../../src/local/services";

export { freePort };

const ROOT = resolve(import.meta.dirname, "../../..");
const WRANGLER = join(ROOT, "node_modules/.bin/wrangler");
const QUIET_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", CI: "true" };

export interface DevServer {
  url: string;
  /** How often the table store process was restarted after a statement held it past the time limit. */
  storeRestarts(): number;
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

/**
 * Starts the local service as a user would (`npm run dev`: the API, engine
 * and table store Workers in three `wrangler dev` processes, src/local), with
 * fresh local state and a dev registry of its own: migrations applied first,
 * development mode on, on a free port.
 */
export async function startWranglerDev(vars: Record<string, string> = {}): Promise<DevServer> {
  const state = mkdtempSync(join(tmpdir(), "dqs-e2e-"));
  applyLocalMigrations(WRANGLER, ROOT, state, QUIET_ENV);
  let log = "";
  let service: LocalService;
  try {
    service = await startLocalService({
      cwd: ROOT,
      // Other runs' Workers register under the same names; each run finds only its own.
      env: { ...QUIET_ENV, WRANGLER_REGISTRY_PATH: join(state, "registry") },
      state,
      vars,
      onOutput: (worker, text) => (log += worker === "api" ? text : text.replace(/^(?=.)/gm, `[${worker}] `)),
    });
  } catch (error) {
    rmSync(state, { recursive: true, force: true });
    throw new Error(`wrangler dev did not become ready (${String(error)}):\n${log}`);
  }
  return {
    url: service.url,
    output: () => log,
    storeRestarts: () => service.storeRestarts(),
    async stop() {
      await service.stop();
      rmSync(state, { recursive: true, force: true });
    },
  };
}
