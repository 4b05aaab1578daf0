/**
 * `npm run dev`: builds the console, applies the D1 migrations to the local
 * state, and runs the service on http://localhost:8787 (services.ts). Its
 * arguments go to the API Worker's `wrangler dev`: `--port 8811`,
 * `--var QUERY_TIME_LIMIT_SECONDS:10`. Ctrl-C stops all four processes.
 */
import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { startLocalService, type WorkerName } from "./services.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const STATE = join(ROOT, ".wrangler/state");
// A registry of this project's own, so another `wrangler dev` on the machine never answers for one of its Workers.
const env = { ...process.env, WRANGLER_REGISTRY_PATH: join(ROOT, ".wrangler/registry") };

const { port, vars, rest } = parseArguments(process.argv.slice(2));
run("node", ["src/web/build.mjs"]);
run(join(ROOT, "node_modules/.bin/wrangler"), ["d1", "migrations", "apply", "DB", "--local", "--persist-to", STATE]);

const prefixes: Record<WorkerName, string> = {
  api: "",
  engine: "[engine] ",
  "engine-long": "[engine-long] ",
  store: "[store] ",
};
const service = await startLocalService({
  cwd: ROOT,
  env,
  port,
  state: STATE,
  vars,
  apiArgs: rest,
  onFailure: (worker) => {
    console.error(`\nThe ${worker} Worker's wrangler dev stopped; dqs stopped with it.`);
    process.exit(1);
  },
  onOutput: (worker, text) =>
    process.stdout.write(prefixes[worker] ? text.replace(/^(?=.)/gm, prefixes[worker]) : text),
});
console.log(`\ndqs is running on ${service.url} (API, engine lanes and table store Workers). Ctrl-C stops it.\n`);
const stop = () => void service.stop().then(() => process.exit(0));
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, stop);
// The Workers run in process groups of their own: when whatever started this one goes away, they go too.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && stop(), 1000).unref();

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: ROOT, env, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** `--port N` and `--var KEY:VALUE` (also `--port=N`), the rest passed on as given. */
function parseArguments(args: string[]): { port: number; vars: Record<string, string>; rest: string[] } {
  let port = 8787;
  const vars: Record<string, string> = {};
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = () => inline ?? args[++i] ?? "";
    if (flag === "--port") port = Number(value());
    else if (flag === "--var") {
      const [key = "", ...parts] = value().split(":");
      vars[key] = parts.join(":");
    } else rest.push(args[i]!);
  }
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    console.error(`--port must be a port number (1–65535); got ${port}.`);
    process.exit(2);
  }
  return { port, vars, rest };
}
