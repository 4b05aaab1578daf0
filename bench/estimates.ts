/**
 * `npm run bench -- --estimates`: a table store query's estimate against its
 * run, and what a runaway query does to other users (bench/README.md,
 * "Estimates and bounded work"). On one file (default the 1M-row one), in a
 * table store:
 * - for Q1–Q4 and three self-joins (one that runs a few seconds, one ten
 *   times its work, one far past the time limit): `EstimatedSeconds` from `POST /v1/query/validate`, the
 *   seconds the query ran (its status's LoadMs + ExecuteMs), their ratio, and
 *   the store rate the ratio implies (STORE_STEPS_PER_SECOND × ratio); with
 *   the sqlite3 tool, each query's own virtual-machine steps on the same rows
 *   (`.stats on`) over the store's seconds, the rate measured directly;
 * - what the estimate adds to Q1: the validate call's time (resolve, sample,
 *   estimate: an upper bound of the estimate inside a run) against Q1's end to
 *   end, and the engine's "estimating" phase as a status poll sees it;
 * - with QUERY_TIME_LIMIT_SECONDS=10, in a second service: the largest
 *   latency of another user's `SELECT 1` (Prefer: wait=5, then its status
 *   until it succeeds) and of `GET /v1/openapi.json`, each sampled every
 *   250 ms, idle and while the far self-join (refused by its estimate), a
 *   sql.js count over a recursive CTE of 10^9 rows (stopped at the limit) and
 *   the ten-times join (let through when its estimate is under the limit: the
 *   store process is restarted past the limit + 5 s) run.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, jsonAnswer, login, type QueryStatus } from "./dqs.ts";
import { importSqlite3File } from "./engines.ts";
import { prepareData, writeLookup, type BenchFile, type FileLabel } from "./generate.ts";
import { ROOT, startWranglerDev, type DevServer } from "./server.ts";

const ACCOUNT = "bench";
const DATASET = "estimates";
const OTHER_USER = "bench-other";
/**
 * The sql.js runaway's user: a query stopped at the time limit, or refused by its estimate, puts its user's next
 * queries behind other users' for QUERY_OVERRUN_COOLDOWN_SECONDS (60 s), and the probes keep the queue busy.
 */
const RUNAWAY_USER = "bench-runaway";
/** The let-through store runaway's user (granted read on the dataset), for the same reason. */
const STORE_RUNAWAY_USER = "bench-store-runaway";
/** The time limit of the runaway part. */
const RUNAWAY_LIMIT_SECONDS = 10;
const SAMPLE_EVERY_MS = 250;
/** TABLE_STORE_MIN_ROWS's default (wrangler.toml): a smaller file gets its store by a lower threshold. */
const DEFAULT_STORE_MIN_ROWS = 250_000;

export interface EstimatesOptions {
  file: FileLabel;
  /** How often each query runs (the few-seconds join at most twice). */
  repeats: number;
  vars: Record<string, string>;
  out: string;
  /** The bench's Q1–Q4: `{t}` the table, `{lookup}` the lookup table. */
  queries: { id: string; sql: string }[];
}

/** The self-joins and the runaway sql.js query, on the table `{t}`. */
const JOIN_FEW = {
  id: "join-few",
  // qty has 100 values: every 100th row of a meets about 1/100 of b, 10^8 pairs on 1M rows.
  sql: "SELECT count(*) FROM {t} a JOIN {t} b ON a.qty = b.qty WHERE a.id % 100 = 0",
};
const JOIN_FAR = {
  id: "join-far",
  // category has 50 values: 2·10^10 pairs on 1M rows, hours of work.
  sql: "SELECT count(*) FROM {t} a JOIN {t} b ON a.category = b.category",
};
/**
 * join-few with ten times the rows of a: 10^9 pairs on 1M rows, tens of seconds in the store; on samples its pairs
 * are few beside the scans, so an estimate that misses how they grow lets it through.
 */
const JOIN_LET_THROUGH = {
  id: "join-let-through",
  sql: "SELECT count(*) FROM {t} a JOIN {t} b ON a.qty = b.qty WHERE a.id % 10 = 0",
};
const CTE_BILLION = {
  id: "cte-1e9",
  sql: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000000000) SELECT count(*) FROM c",
};

interface Validated {
  ok: boolean;
  seconds: number;
  valid: boolean | null;
  engine: string | null;
  estimatedSeconds: number | null;
  message: string;
}

interface EstimateCase {
  id: string;
  sql: string;
  engine: string | null;
  estimated_s: number | null;
  validate_s: number;
  validate_message: string;
  /** The status's LoadMs + ExecuteMs, seconds (median of the runs); null when it did not run. */
  actual_s: number | null;
  /** Of which LoadMs (bringing other items into the store), seconds (median). */
  load_s: number | null;
  actual_runs_s: number[];
  end_to_end_s: number | null;
  estimated_over_actual: number | null;
  /** STORE_STEPS_PER_SECOND × estimated / ExecuteMs: the rate the estimate's steps ran at in the store. */
  implied_store_steps_per_s: number | null;
  /** The sqlite3 tool's virtual-machine steps for the statement on the same rows (`.stats on`). */
  sqlite3_steps: number | null;
  sqlite3_s: number | null;
  /** sqlite3_steps / actual_s: the store's own rate, in the statement's native steps. */
  store_native_steps_per_s: number | null;
  /** The estimate's steps (estimated_s × STORE_STEPS_PER_SECOND) over sqlite3's: how well the samples count. */
  estimated_over_sqlite3_steps: number | null;
  outcome: string;
}

interface Probe {
  kind: "select1" | "openapi";
  at_s: number;
  seconds: number;
  ok: boolean;
}

interface RunawayCase {
  id: string;
  sql: string;
  estimated_s: number | null;
  validate_message: string;
  outcome: string;
  seconds: number;
  engine: string | null;
  queue_wait_s: number | null;
  execute_s: number | null;
  select1: ProbeSummary;
  openapi: ProbeSummary;
  store_restarts: number;
}

interface ProbeSummary {
  count: number;
  failed: number;
  median_s: number | null;
  max_s: number | null;
}

function median(values: number[]): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const round = (value: number | null, digits = 3) => (value === null ? null : Number(value.toFixed(digits)));

/** STORE_STEPS_PER_SECOND as the snapshot's code has it. */
function storeRate(snapshot: string): number {
  const text = readFileSync(join(snapshot, "src/worker/query/engine/evaluate-sql.ts"), "utf8");
  const match = text.match(/^const STORE_STEPS_PER_SECOND = ([\d_]+);/m);
  if (!match) throw new Error("STORE_STEPS_PER_SECOND not found in evaluate-sql.ts");
  return Number(match[1]!.replaceAll("_", ""));
}

async function validate(client: Client, sql: string): Promise<Validated> {
  const started = performance.now();
  const answer = await jsonAnswer(
    fetch(`${client.baseUrl}/v1/query/validate`, {
      method: "POST",
      headers: { authorization: `Bearer ${client.token}`, "content-type": "application/json" },
      body: JSON.stringify({ Sql: sql }),
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const data = answer.json?.Data as
    { Valid: boolean; Message: string; Engine: string | null; EstimatedSeconds: number | null } | undefined;
  if (answer.status !== 200 || !data)
    return {
      ok: false,
      seconds,
      valid: null,
      engine: null,
      estimatedSeconds: null,
      message: answer.text.slice(0, 300),
    };
  return {
    ok: true,
    seconds,
    valid: data.Valid,
    engine: data.Engine,
    estimatedSeconds: data.EstimatedSeconds,
    message: data.Message,
  };
}

/**
 * The query submitted without waiting and its status read every 20 ms: when the engine's "estimating" message
 * was first and last seen, and the end. The phase is bounded by the poll's resolution and the status's own
 * latency (a few ms, the API being a process of its own).
 */
async function polledRun(
  client: Client,
  sql: string,
): Promise<{ estimatingFrom: number | null; estimatingTo: number | null; storeFrom: number | null; end: number }> {
  const auth = { authorization: `Bearer ${client.token}` };
  const started = performance.now();
  const at = () => (performance.now() - started) / 1000;
  const submitted = await jsonAnswer(
    fetch(`${client.baseUrl}/v1/query`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ Sql: sql, Reuse: false }),
    }),
  );
  const id = (submitted.json?.Data as { QueryId?: string } | undefined)?.QueryId;
  if (!id) throw new Error(`submit failed: ${submitted.status} ${submitted.text.slice(0, 200)}`);
  let estimatingFrom: number | null = null;
  let estimatingTo: number | null = null;
  let storeFrom: number | null = null;
  for (;;) {
    const answer = await jsonAnswer(fetch(`${client.baseUrl}/v1/query/${id}/status`, { headers: auth }));
    const data = answer.json?.Data as QueryStatus | undefined;
    const now = at();
    if (data) {
      if (/estimating/i.test(data.Message)) {
        estimatingFrom ??= now;
        estimatingTo = now;
      } else if (/in the table store/i.test(data.Message)) storeFrom ??= now;
      if (data.Status === "succeeded" || data.Status === "failed" || data.Status === "cancelled")
        return { estimatingFrom, estimatingTo, storeFrom, end: now };
    }
    if (now > 300) throw new Error("the polled query did not end in 300 s");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The sqlite3 tool's steps and seconds for `sql` on the imported file (`.stats on`); null when it fails. */
function sqlite3Steps(dbPath: string, sql: string): Promise<{ steps: number; seconds: number } | null> {
  return new Promise((resolve) => {
    const child = spawn("sqlite3", ["-readonly", dbPath], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", () => resolve(null));
    child.on("close", () => {
      const steps = [...out.matchAll(/Virtual Machine Steps:\s+(\d+)/g)].map((m) => Number(m[1]));
      const time = out.match(/^Run Time: real ([\d.]+)/m);
      resolve(steps.length && time ? { steps: steps.at(-1)!, seconds: Number(time[1]) } : null);
    });
    child.stdin.end([".bail on", ".stats on", ".timer on", `${sql};`, ""].join("\n"));
  });
}

/**
 * Samples, until `until` resolves, another user's `SELECT 1` (submitted with Prefer: wait=5, then its status
 * every 50 ms until it succeeds) and `GET /v1/openapi.json`, each in a loop of its own that starts a request
 * every 250 ms, or as soon as the previous one answered when that took longer.
 */
async function probeWhile(baseUrl: string, other: string, until: Promise<unknown>): Promise<Probe[]> {
  const probes: Probe[] = [];
  let done = false;
  void until.finally(() => (done = true));
  const started = performance.now();
  const loop = async (kind: Probe["kind"], once: () => Promise<boolean>) => {
    while (!done) {
      const from = performance.now();
      let ok = false;
      try {
        ok = await once();
      } catch {
        ok = false;
      }
      probes.push({ kind, at_s: (from - started) / 1000, seconds: (performance.now() - from) / 1000, ok });
      const wait = SAMPLE_EVERY_MS - (performance.now() - from);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  };
  const auth = { authorization: `Bearer ${other}` };
  const select1 = async () => {
    const submitted = await jsonAnswer(
      fetch(`${baseUrl}/v1/query`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json", prefer: "wait=5" },
        body: JSON.stringify({ Sql: "SELECT 1", Reuse: false }),
      }),
    );
    const data = submitted.json?.Data as { QueryId?: string; Status?: string } | undefined;
    if (!data?.QueryId) return false;
    let status = data.Status;
    const deadline = performance.now() + 120_000;
    while (status !== "succeeded") {
      if (status === "failed" || status === "cancelled" || performance.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
      const answer = await jsonAnswer(fetch(`${baseUrl}/v1/query/${data.QueryId}/status`, { headers: auth }));
      status = (answer.json?.Data as QueryStatus | undefined)?.Status ?? status;
    }
    return true;
  };
  const openapi = async () => {
    const response = await fetch(`${baseUrl}/v1/openapi.json`);
    await response.arrayBuffer();
    return response.ok;
  };
  await Promise.all([loop("select1", select1), loop("openapi", openapi), until]);
  return probes;
}

function summarizeProbes(probes: Probe[], kind: Probe["kind"]): ProbeSummary {
  const mine = probes.filter((p) => p.kind === kind);
  const seconds = mine.map((p) => p.seconds);
  return {
    count: mine.length,
    failed: mine.filter((p) => !p.ok).length,
    median_s: round(median(seconds)),
    max_s: round(seconds.length ? Math.max(...seconds) : null),
  };
}

/** Logs in, uploads the file and the lookup table, and waits until the file's table store is ready. */
async function prepareService(
  server: DevServer,
  file: BenchFile,
  lookupPath: string,
  log: (line: string) => void,
): Promise<Client> {
  const client = new Client(server.url, await login(server.url, ACCOUNT));
  await client.createDataset(ACCOUNT, DATASET);
  for (const [name, path] of [
    ["t", file.path],
    ["lookup", lookupPath],
  ] as const) {
    const uploaded = await client.upload(ACCOUNT, DATASET, name, path);
    if (uploaded.status !== 200) throw new Error(`upload of ${name} failed: ${uploaded.status} ${uploaded.message}`);
    const ready = await client.waitQueryReady(ACCOUNT, DATASET, name, 900_000);
    if (!ready.ready) throw new Error(`${name} did not become query-ready in ${ready.seconds.toFixed(0)} s`);
    if (name === "t" && ready.tableStore?.State !== "ready")
      throw new Error(`${name} has no ready table store (${JSON.stringify(ready.tableStore)})`);
    log(
      `${name}: uploaded in ${uploaded.seconds.toFixed(2)} s, query-ready ${ready.seconds.toFixed(2)} s later` +
        (ready.tableStore ? ` (table store, ${ready.tableStore.Rows} rows)` : ""),
    );
  }
  return client;
}

export async function runEstimatesBench(options: EstimatesOptions, log: (line: string) => void): Promise<void> {
  const dataDir = join(ROOT, "bench/data");
  const [file] = await prepareData(dataDir, log, [options.file]);
  if (!file) throw new Error(`no file ${options.file}`);
  const lookupPath = writeLookup(dataDir);
  const table = `${ACCOUNT}.${DATASET}.t`;
  const named = (sql: string) => sql.replaceAll("{t}", table).replaceAll("{lookup}", `${ACCOUNT}.${DATASET}.lookup`);
  const local = (sql: string) => sql.replaceAll("{t}", "t").replaceAll("{lookup}", "lookup");
  // The item gets a table store: the default threshold, or the file's rows when it is smaller.
  const vars = {
    TABLE_STORE_MIN_ROWS: String(Math.min(DEFAULT_STORE_MIN_ROWS, file.rows)),
    ...options.vars,
  };
  const started = new Date();

  // sqlite3's own steps for each statement on the same rows.
  const sqliteDb = join(dataDir, `estimates-${file.label}.sqlite`);
  const imported = await importSqlite3File(file.path, file.gzip, lookupPath, sqliteDb);
  if (!imported.ok) log(`sqlite3 import failed (${imported.message}): no native step counts`);

  const cases: EstimateCase[] = [];
  let q1Cost: Record<string, number | null> | null = null;
  let runaway: {
    limit_s: number;
    idle: { select1: ProbeSummary; openapi: ProbeSummary };
    cases: RunawayCase[];
  } | null = null;
  let rate = 0;
  let server: DevServer | null = null;
  try {
    log(`starting the local service (vars ${JSON.stringify(vars)}) ...`);
    server = await startWranglerDev(vars);
    rate = storeRate(server.snapshot);
    log(`local service on ${server.url}; STORE_STEPS_PER_SECOND ${rate.toLocaleString("en-US")}`);
    const client = await prepareService(server, file, lookupPath, log);
    // Warm-up: the store's pages and the engine's isolate.
    const warm = await client.query(named(options.queries[0]!.sql), { timeoutMs: 300_000 });
    log(`warm-up ${options.queries[0]!.id}: ${warm.ok ? `${warm.seconds.toFixed(2)} s` : warm.message}`);

    for (const query of [...options.queries, JOIN_FEW, JOIN_LET_THROUGH, JOIN_FAR]) {
      const sql = named(query.sql);
      const checked = await validate(client, sql);
      const far = query === JOIN_FAR;
      const runs: {
        seconds: number;
        actual: number | null;
        load: number | null;
        status: QueryStatus | undefined;
        message: string;
      }[] = [];
      // The far join only when its estimate refuses it (else it would hold the store up to the time limit).
      const times = far
        ? checked.valid && /would be refused/.test(checked.message)
          ? 1
          : 0
        : query === JOIN_FEW
          ? Math.min(2, options.repeats)
          : query === JOIN_LET_THROUGH
            ? 1
            : options.repeats;
      for (let i = 0; i < times; i++) {
        const run = await client.query(sql, { timeoutMs: 600_000 });
        const timings = run.status?.Timings;
        runs.push({
          seconds: run.seconds,
          actual: run.ok && timings ? (timings.LoadMs + timings.ExecuteMs) / 1000 : null,
          load: run.ok && timings ? timings.LoadMs / 1000 : null,
          status: run.status,
          message: run.ok ? "succeeded" : run.message,
        });
      }
      const actuals = runs.flatMap((r) => (r.actual === null ? [] : [r.actual]));
      const actual = median(actuals);
      const estimated = checked.estimatedSeconds;
      const ratio = estimated !== null && actual ? estimated / actual : null;
      const load = median(runs.flatMap((r) => (r.load === null ? [] : [r.load])));
      const execute = actual !== null ? actual - (load ?? 0) : null;
      // Not for the two big joins (sqlite3 would take about a minute, and hours).
      const native =
        imported.ok && !far && query !== JOIN_LET_THROUGH ? await sqlite3Steps(sqliteDb, local(query.sql)) : null;
      const storeEngine = (runs[0]?.status?.Engine ?? checked.engine) === "store";
      cases.push({
        id: query.id,
        sql: query.sql,
        engine: runs[0]?.status?.Engine ?? checked.engine,
        estimated_s: estimated,
        validate_s: round(checked.seconds)!,
        validate_message: checked.message,
        actual_s: round(actual),
        load_s: round(load),
        actual_runs_s: actuals.map((a) => round(a)!),
        end_to_end_s: round(median(runs.filter((r) => r.actual !== null).map((r) => r.seconds))),
        estimated_over_actual: round(ratio),
        implied_store_steps_per_s:
          estimated !== null && execute && storeEngine ? Math.round((estimated * rate) / execute) : null,
        sqlite3_steps: native?.steps ?? null,
        sqlite3_s: round(native?.seconds ?? null),
        store_native_steps_per_s: native && execute && storeEngine ? Math.round(native.steps / execute) : null,
        estimated_over_sqlite3_steps: native && estimated !== null ? round((estimated * rate) / native.steps) : null,
        outcome: runs.length ? runs.map((r) => r.message.slice(0, 300)).join(" | ") : "not run (validate only)",
      });
      const c = cases.at(-1)!;
      log(
        `${query.id}: estimated ${estimated ?? "n/a"} s (validate ${checked.seconds.toFixed(3)} s), ran ${c.actual_s ?? "n/a"} s ` +
          `(${c.engine ?? "?"}), ratio ${c.estimated_over_actual ?? "n/a"}` +
          (c.sqlite3_steps !== null
            ? `; sqlite3 ${c.sqlite3_steps.toLocaleString("en-US")} steps in ${c.sqlite3_s} s`
            : "") +
          (c.store_native_steps_per_s !== null
            ? `, store ${(c.store_native_steps_per_s / 1e6).toFixed(0)} M native steps/s`
            : "") +
          `; ${c.outcome.slice(0, 200)}`,
      );
    }

    // What the estimate adds to Q1: the validate call (an upper bound: it also resolves names and answers over HTTP)
    // against Q1 end to end, and the engine's "estimating" phase as polled.
    const q1 = named(options.queries[0]!.sql);
    const validates: number[] = [];
    const totals: number[] = [];
    const executes: number[] = [];
    const phases: number[] = [];
    for (let i = 0; i < Math.max(3, options.repeats); i++) {
      validates.push((await validate(client, q1)).seconds);
      const run = await client.query(q1, { timeoutMs: 300_000 });
      if (run.ok) {
        totals.push(run.seconds);
        if (run.status.Timings) executes.push((run.status.Timings.LoadMs + run.status.Timings.ExecuteMs) / 1000);
      }
      const polled = await polledRun(client, q1);
      if (polled.estimatingFrom !== null && polled.storeFrom !== null)
        phases.push(polled.storeFrom - polled.estimatingFrom);
    }
    const validateMedian = median(validates);
    const totalMedian = median(totals);
    q1Cost = {
      validate_s: round(validateMedian),
      q1_end_to_end_s: round(totalMedian),
      q1_store_execute_s: round(median(executes)),
      validate_over_q1: validateMedian !== null && totalMedian ? round(validateMedian / totalMedian) : null,
      estimating_phase_polled_s: round(median(phases)),
      estimating_phase_seen_in: phases.length,
      runs: validates.length,
    };
    log(`Q1 cost of the estimate: ${JSON.stringify(q1Cost)}`);
    writeFileSync(join(dataDir, "estimates-wrangler-dev.log"), server.output());
    await server.stop();
    server = null;

    // The runaway part, with a 10 s time limit.
    const runawayVars = { ...vars, QUERY_TIME_LIMIT_SECONDS: String(RUNAWAY_LIMIT_SECONDS) };
    log(`starting the local service again (vars ${JSON.stringify(runawayVars)}) ...`);
    server = await startWranglerDev(runawayVars);
    const owner = await prepareService(server, file, lookupPath, log);
    const other = await login(server.url, OTHER_USER);
    const runawayUser = new Client(server.url, await login(server.url, RUNAWAY_USER));
    const storeRunawayUser = new Client(server.url, await login(server.url, STORE_RUNAWAY_USER));
    await owner.grant(ACCOUNT, DATASET, STORE_RUNAWAY_USER, "read");
    const idle = await probeWhile(server.url, other, new Promise((resolve) => setTimeout(resolve, 4_000)));
    const idleSummary = { select1: summarizeProbes(idle, "select1"), openapi: summarizeProbes(idle, "openapi") };
    log(`idle: SELECT 1 ${JSON.stringify(idleSummary.select1)}, openapi ${JSON.stringify(idleSummary.openapi)}`);
    const runawayCases: RunawayCase[] = [];
    // The store runaway last: it ends with the store process restarted.
    for (const query of [JOIN_FAR, CTE_BILLION, JOIN_LET_THROUGH]) {
      const sql = named(query.sql);
      const user = query === CTE_BILLION ? runawayUser : query === JOIN_LET_THROUGH ? storeRunawayUser : owner;
      const checked = await validate(user, sql);
      const restartsBefore = server.storeRestarts();
      const run = user.query(sql, { timeoutMs: 600_000 });
      const probes = await probeWhile(server.url, other, run);
      const result = await run;
      runawayCases.push({
        id: query.id,
        sql: query.sql,
        estimated_s: checked.estimatedSeconds,
        validate_message: checked.message,
        outcome: result.ok ? "succeeded" : result.message,
        seconds: round(result.seconds)!,
        engine: result.status?.Engine ?? checked.engine,
        queue_wait_s: result.status?.Timings ? result.status.Timings.QueueWaitMs / 1000 : null,
        execute_s: result.status?.Timings ? result.status.Timings.ExecuteMs / 1000 : null,
        select1: summarizeProbes(probes, "select1"),
        openapi: summarizeProbes(probes, "openapi"),
        store_restarts: server.storeRestarts() - restartsBefore,
      });
      const c = runawayCases.at(-1)!;
      log(
        `${query.id}: ${c.seconds} s, ${c.outcome.slice(0, 200)}; other user's SELECT 1 max ${c.select1.max_s} s ` +
          `(${c.select1.count}), openapi max ${c.openapi.max_s} s (${c.openapi.count}); store restarts ${c.store_restarts}`,
      );
    }
    runaway = { limit_s: RUNAWAY_LIMIT_SECONDS, idle: idleSummary, cases: runawayCases };
  } finally {
    if (server) {
      writeFileSync(join(dataDir, "estimates-wrangler-dev.log"), server.output());
      await server.stop();
    }
    rmSync(sqliteDb, { force: true });
  }

  const report = {
    date: started.toISOString(),
    file: file.label,
    rows: file.rows,
    vars,
    store_steps_per_second: rate,
    cases,
    q1_cost: q1Cost,
    runaway,
  };
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, `bench/results/${options.out}.json`), JSON.stringify(report, null, 2) + "\n");
  const markdown = render(report);
  writeFileSync(join(ROOT, `bench/results/${options.out}.md`), markdown);
  process.stdout.write(markdown);
  log(`wrote bench/results/${options.out}.md and .json`);
}

function render(report: {
  date: string;
  file: string;
  store_steps_per_second: number;
  cases: EstimateCase[];
  q1_cost: Record<string, number | null> | null;
  runaway: { limit_s: number; idle: { select1: ProbeSummary; openapi: ProbeSummary }; cases: RunawayCase[] } | null;
}): string {
  const n = (value: number | null, digits = 3) => (value === null ? "n/a" : value.toFixed(digits));
  const m = (value: number | null) => (value === null ? "n/a" : `${(value / 1e6).toFixed(0)} M`);
  const lines = [
    `# dqs estimates, ${report.date.replace("T", " ").slice(0, 19)} UTC (${report.file}, table store)`,
    "",
    `STORE_STEPS_PER_SECOND ${report.store_steps_per_second.toLocaleString("en-US")}.`,
    "",
    "| query | engine | estimated s | ran s (load + execute) | of which load | estimated / ran | implied store rate (steps/s) | sqlite3 steps | store native steps/s | estimated / sqlite3 steps |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ...report.cases.map(
      (c) =>
        `| ${c.id} | ${c.engine ?? "n/a"} | ${n(c.estimated_s)} | ${c.actual_s === null ? c.outcome.slice(0, 80) : n(c.actual_s)} | ${n(c.load_s)} | ${n(c.estimated_over_actual, 2)} | ` +
        `${m(c.implied_store_steps_per_s)} | ${c.sqlite3_steps === null ? "n/a" : m(c.sqlite3_steps)} | ${m(c.store_native_steps_per_s)} | ${n(c.estimated_over_sqlite3_steps, 2)} |`,
    ),
    "",
  ];
  if (report.q1_cost)
    lines.push(
      "## What the estimate adds to Q1",
      "",
      `validate ${n(report.q1_cost.validate_s ?? null)} s against Q1 end to end ${n(report.q1_cost.q1_end_to_end_s ?? null)} s ` +
        `(${n((report.q1_cost.validate_over_q1 ?? 0) * 100, 1)}%); the store's load + execute ${n(report.q1_cost.q1_store_execute_s ?? null)} s; ` +
        `"estimating" phase as polled ${n(report.q1_cost.estimating_phase_polled_s ?? null)} s (seen in ${report.q1_cost.estimating_phase_seen_in} of ${report.q1_cost.runs}).`,
      "",
    );
  if (report.runaway) {
    lines.push(
      `## Other users during a runaway query (QUERY_TIME_LIMIT_SECONDS ${report.runaway.limit_s})`,
      "",
      "| while | estimated s | its outcome | its s (queue wait, execute) | SELECT 1 median / max s (n) | openapi.json median / max s (n) | store restarts |",
      "|---|--:|---|--:|--:|--:|--:|",
      `| idle | | | | ${n(report.runaway.idle.select1.median_s)} / ${n(report.runaway.idle.select1.max_s)} (${report.runaway.idle.select1.count}) | ` +
        `${n(report.runaway.idle.openapi.median_s)} / ${n(report.runaway.idle.openapi.max_s)} (${report.runaway.idle.openapi.count}) | |`,
      ...report.runaway.cases.map(
        (c) =>
          `| ${c.id} | ${n(c.estimated_s)} | ${c.outcome.slice(0, 90).replaceAll("|", "/")} | ${n(c.seconds, 2)} (${n(c.queue_wait_s, 2)}, ${n(c.execute_s, 2)}) | ` +
          `${n(c.select1.median_s)} / ${n(c.select1.max_s)} (${c.select1.count}${c.select1.failed ? `, ${c.select1.failed} failed` : ""}) | ` +
          `${n(c.openapi.median_s)} / ${n(c.openapi.max_s)} (${c.openapi.count}${c.openapi.failed ? `, ${c.openapi.failed} failed` : ""}) | ${c.store_restarts} |`,
      ),
      "",
    );
  }
  return lines.join("\n");
}
