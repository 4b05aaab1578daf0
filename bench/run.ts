/**
 * `npm run bench`: the service end to end (wrangler dev, real HTTP API)
 * against the sqlite3 tool and DuckDB on the same generated files and
 * queries. See bench/README.md.
 *
 *   npm run bench                  5 runs
 *   npm run bench -- --quick       1 run
 *   npm run bench -- --runs 3 --files 100k,1m --queries Q1 --var QUERY_MEMORY_BUDGET_BYTES=200000000
 *   npm run bench -- --uploads-only   uploads only (no queries, no references)
 *   npm run bench -- --readme      also put the table into bench/README.md
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { compareRows, type RowOrder } from "./compare.ts";
import { Client, login } from "./dqs.ts";
import { duckdbVersion, parseCsv, runDuckdb, runSqlite3, sqlite3Version, type EngineRun } from "./engines.ts";
import { prepareData, type BenchFile } from "./generate.ts";
import {
  renderMarkdown,
  summarize,
  type CaseRun,
  type IsolateNote,
  type MemoryMode,
  type Timed,
  type UploadRun,
} from "./report.ts";
import { IsolateInspector, type HeapReport, type HeldReport } from "./inspector.ts";
import {
  findDescendants,
  killAllStarted,
  measureRss,
  ROOT,
  runtimeInspectorPort,
  startWranglerDev,
  varsFromOptions,
  type DevServer,
  type RssReport,
} from "./server.ts";

const BENCH = join(ROOT, "bench");
const ACCOUNT = "bench";
const DATASET = "bench";

export interface QueryDef {
  id: "Q1" | "Q2" | "Q3";
  /** `{t}` stands for the table. */
  sql: string;
  order: RowOrder;
}

export const QUERIES: QueryDef[] = [
  {
    id: "Q1",
    sql: "SELECT category, count(*), sum(amount), avg(qty) FROM {t} GROUP BY category ORDER BY 1",
    order: { ordered: true },
  },
  {
    id: "Q2",
    sql: "SELECT * FROM {t} WHERE note LIKE '%abc%' ORDER BY amount DESC LIMIT 100",
    // ORDER BY amount is not unique: compare as a set, and only count the rows tied at the LIMIT's cut.
    order: { ordered: false, tieColumn: 3 },
  },
  {
    id: "Q3",
    sql: "SELECT a.category, count(*) FROM {t} a JOIN (SELECT category, max(amount) m FROM {t} GROUP BY category) b ON a.category = b.category AND a.amount > b.m * 0.99 GROUP BY 1",
    order: { ordered: false },
  },
];

/**
 * The memory pass's measures, in order: each upload (and each query) is run
 * once per entry. "held": readings after forced full GCs (live memory);
 * "garbage": readings as they come, garbage not yet collected included.
 * Forcing GCs changes what the other measure would see, so they never share a run.
 */
const MEMORY_PASS_UPLOADS: MemoryMode[] = ["held", "held", "held", "garbage"];
const MEMORY_PASS_QUERIES: MemoryMode[] = ["held", "garbage"];

interface Collected {
  uploads: UploadRun[];
  cases: CaseRun[];
}

/** The memory pass's DevTools sessions: uploads are read in the API Worker's isolate, queries in the engine's. */
interface Isolates {
  api: IsolateInspector | null;
  engine: IsolateInspector | null;
}

/** The data item each file is uploaded as. */
const DATA_NAME: Record<BenchFile["label"], string> = { "100k": "t100k", "1m": "t1m", "1m.gz": "t1m_gz" };

const log = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

function options() {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      runs: { type: "string" },
      files: { type: "string", default: "100k,1m,1m.gz" },
      queries: { type: "string", default: "Q1,Q2,Q3" },
      var: { type: "string", multiple: true, default: [] },
      readme: { type: "boolean", default: false },
      "no-reference": { type: "boolean", default: false },
      "no-inspector": { type: "boolean", default: false },
      "uploads-only": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(
      [
        "npm run bench -- [--quick] [--runs N] [--files 100k,1m,1m.gz] [--queries Q1,Q2,Q3]",
        "                 [--var NAME=VALUE ...] [--no-reference] [--no-inspector] [--uploads-only] [--readme]",
        "  --quick         one run (default: 5)",
        "  --var           passed to wrangler dev as --var NAME:VALUE (e.g. QUERY_MEMORY_BUDGET_BYTES=...)",
        "  --no-reference  skip sqlite3 and DuckDB",
        "  --no-inspector  no memory pass (the isolates' heaps read through DevTools: uploads in the API Worker, queries in the engine)",
        "  --uploads-only  upload the files (timed runs and memory pass) but run no query",
        "  --readme        also write the tables into bench/README.md and README.md (between the bench:latest markers)",
        "",
      ].join("\n"),
    );
    process.exit(0);
  }
  const runs = values.runs ? Number(values.runs) : values.quick ? 1 : 5;
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, not ${values.runs}`);
  const files = values.files.split(",").map((f) => f.trim());
  for (const f of files) if (!(f in DATA_NAME)) throw new Error(`unknown file ${f}; use 100k, 1m, 1m.gz`);
  const queries = values["uploads-only"] ? [] : values.queries.split(",").map((q) => q.trim().toUpperCase());
  for (const q of queries) if (!QUERIES.some((d) => d.id === q)) throw new Error(`unknown query ${q}; use Q1, Q2, Q3`);
  const vars = varsFromOptions(values.var);
  return {
    runs,
    files,
    queries,
    vars,
    readme: values.readme,
    reference: !values["no-reference"],
    inspector: !values["no-inspector"],
  };
}

function packageVersion(path: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, path), "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

async function machine() {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? "?",
    cores: cpu.length,
    ram_bytes: totalmem(),
    os: `${process.platform} ${release()}`,
    node: process.version,
    wrangler: packageVersion("node_modules/wrangler/package.json"),
    workerd: packageVersion("node_modules/wrangler/node_modules/@cloudflare/workerd-linux-64/package.json"),
    sql_js: packageVersion("node_modules/sql.js/package.json"),
    sqlite3: sqlite3Version(),
    duckdb: await duckdbVersion(),
    duckdb_node_api: packageVersion("node_modules/@duckdb/node-api/package.json"),
  };
}

/** The workerd processes under wrangler: the one serving the entry socket is the proxy; the other runs the Worker. */
function workerdProcesses(server: DevServer): { worker: number[]; proxy: number[] } {
  const port = new URL(server.url).port;
  const worker: number[] = [];
  const proxy: number[] = [];
  for (const p of findDescendants(server.pid, "workerd")) {
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${p.pid}/cmdline`, "utf8").replace(/\0/g, " ");
    } catch {
      continue;
    }
    (cmdline.includes(`--socket-addr=entry=127.0.0.1:${port}`) ? proxy : worker).push(p.pid);
  }
  return { worker, proxy };
}

async function main() {
  const opts = options();
  const started = new Date();
  log(`runs: ${opts.runs}; files: ${opts.files.join(", ")}; queries: ${opts.queries.join(", ")}`);
  const allFiles = await prepareData(join(BENCH, "data"), log);
  const files = allFiles.filter((f) => opts.files.includes(f.label));
  const queries = QUERIES.filter((q) => opts.queries.includes(q.id));
  const info = await machine();
  log(
    `machine: ${info.cpu}, ${info.cores} cores, node ${info.node}, wrangler ${info.wrangler}, sqlite3 ${info.sqlite3}, duckdb ${info.duckdb}`,
  );

  const timed: Collected = { uploads: [], cases: [] };
  const memory: Collected = { uploads: [], cases: [] };
  let server: DevServer | null = null;
  const stopServer = async () => {
    const s = server;
    server = null;
    await s?.stop();
  };
  const interrupted = () => {
    log("interrupted: stopping wrangler dev");
    void stopServer().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  // Whatever happens, no wrangler outlives the bench (it runs in a process group of its own).
  process.once("exit", killAllStarted);

  let serverNote: string | null = null;
  let isolateNotes: IsolateNote[] = [];
  try {
    log("starting wrangler dev (fresh state) ...");
    server = await startWranglerDev(opts.vars);
    let pids = workerdProcesses(server);
    const running = server;
    /** The workerd processes now: wrangler restarts them when it reloads the Worker. */
    const currentPids = () => {
      const now = workerdProcesses(running);
      if (now.worker.join() !== pids.worker.join())
        log(`  workerd restarted: Worker process ${pids.worker.join(",")} → ${now.worker.join(",")}`);
      pids = now;
      return now;
    };
    log(
      `wrangler dev on ${server.url}; wrangler pid ${server.pid}; workerd worker ${pids.worker.join(",")} proxy ${pids.proxy.join(",")}`,
    );
    if (pids.worker.length === 0) log("no workerd process found under wrangler: workerd RSS is not measured");
    const client = new Client(server.url, await login(server.url, ACCOUNT));
    await client.createDataset(ACCOUNT, DATASET);
    await warmUp(client);

    /**
     * One pass: upload every file, then every (file, query). Timed: no inspector, one of each.
     * Memory pass: each upload and each query once per measure in `memory`.
     */
    const pass = async (
      run: number,
      isolates: Isolates | null,
      reference: boolean,
      into: Collected,
      memory: { uploads: MemoryMode[]; queries: MemoryMode[] } | null = null,
    ) => {
      const uploaded = new Set<string>();
      const uploadModes = memory?.uploads ?? [null];
      for (const [file, mode] of files.flatMap((f) => uploadModes.map((m) => [f, m] as const))) {
        const result = await uploadOnce(client, file, currentPids(), isolates?.api ?? null, mode);
        into.uploads.push({ run, ...result });
        if (result.ok) uploaded.add(file.label);
        log(
          `  upload ${file.label}: ${result.ok ? `${(file.bytes / 1e6 / result.seconds).toFixed(1)} MB/s` : `FAILED ${result.message}`}` +
            (result.workerRss ? `, workerd RSS +${(result.workerRss.delta / 1e6).toFixed(1)} MB` : "") +
            (result.isolateHeap ? `, isolate incl. garbage +${(result.isolateHeap.delta / 1e6).toFixed(1)} MB` : "") +
            (result.isolateHeld
              ? `, isolate held +${(result.isolateHeld.delta / 1e6).toFixed(1)} MB (${result.isolateHeld.samples} readings after GC)`
              : "") +
            (result.ok
              ? result.readySeconds === null
                ? ", column images NOT built"
                : `, query-ready ${result.readySeconds.toFixed(2)} s later`
              : ""),
        );
      }
      const queryModes = memory?.queries ?? [null];
      for (const file of files) {
        for (const [query, mode] of queries.flatMap((q) => queryModes.map((m) => [q, m] as const))) {
          const record = await caseOnce(
            client,
            file,
            query,
            uploaded.has(file.label),
            reference,
            currentPids().worker,
            isolates?.engine ?? null,
            mode,
          );
          into.cases.push({ run, ...record });
          log(
            `  ${file.label} ${query.id}: dqs ${record.dqs.ok ? `${record.dqs.seconds.toFixed(2)} s` : `FAILED (${record.dqs.message.slice(0, 160)})`}` +
              (record.sqlite3 ? `, sqlite3 ${engineText(record.sqlite3)}` : "") +
              (record.duckdb ? `, duckdb ${engineText(record.duckdb)}` : "") +
              (record.isolateHeapDelta !== null
                ? `, isolate incl. garbage +${(record.isolateHeapDelta / 1e6).toFixed(1)} MB`
                : "") +
              (record.isolateHeldDelta !== null
                ? `, isolate held +${(record.isolateHeldDelta / 1e6).toFixed(1)} MB (${record.isolateHeldSamples} readings)`
                : "") +
              (record.mismatches.length ? `; MISMATCH ${record.mismatches.join("; ")}` : ""),
          );
        }
      }
    };

    for (let run = 1; run <= opts.runs; run++) {
      log(`run ${run}/${opts.runs}`);
      await pass(run, null, opts.reference, timed);
    }
    // A DevTools session puts the isolate in debugging mode (WebAssembly stays in its baseline tier:
    // queries run ~1.5x slower), so the isolate's memory is read in a pass of its own, never timed.
    if (opts.inspector) {
      const connected = await connectIsolates(server, currentPids().worker, queries.length > 0);
      isolateNotes = connected.notes;
      const { api, engine } = connected.isolates;
      if (!api && !engine) log("memory pass: no isolate could be inspected; the isolates' memory is not measured");
      else {
        log("memory pass (DevTools attached; its times are not used)");
        try {
          await pass(0, connected.isolates, false, memory, {
            uploads: MEMORY_PASS_UPLOADS,
            queries: MEMORY_PASS_QUERIES,
          });
        } finally {
          api?.close();
          engine?.close();
        }
      }
    }
  } catch (error) {
    serverNote = `the bench stopped early: ${error instanceof Error ? error.message : String(error)}`;
    log(serverNote);
    if (server) log(`wrangler output (tail):\n${(server as DevServer).output().slice(-3000)}`);
  } finally {
    if (server) writeFileSync(join(BENCH, "data/wrangler-dev.log"), (server as DevServer).output());
    await stopServer();
  }

  const summary = summarize({
    date: started.toISOString(),
    machine: info,
    runs: opts.runs,
    vars: opts.vars,
    memoryBudgetBytes: memoryBudget(opts.vars),
    files,
    queries,
    uploads: timed.uploads,
    cases: timed.cases,
    memory,
    isolates: isolateNotes,
    note: serverNote,
  });
  const markdown = renderMarkdown(summary);
  mkdirSync(join(BENCH, "results"), { recursive: true });
  writeFileSync(join(BENCH, "results/latest.json"), JSON.stringify(summary, null, 2) + "\n");
  writeFileSync(join(BENCH, "results/latest.md"), markdown);
  if (opts.readme) updateReadme(markdown);
  process.stdout.write(markdown);
  log("wrote bench/results/latest.md and bench/results/latest.json");
  process.exitCode = serverNote ? 1 : 0;
}

/** A Worker's `name` and the file wrangler bundles its `main` to (`src/engine.ts` → `engine.js`), from its config. */
function workerOf(dir: string, config: string): { name: string; bundle: string } | null {
  let text: string;
  try {
    text = readFileSync(join(dir, config), "utf8");
  } catch {
    return null;
  }
  // The first `name =` and `main =` lines are the top-level ones (tables come after them).
  const name = text.match(/^name\s*=\s*"([^"]+)"/m)?.[1];
  const main = text.match(/^main\s*=\s*"([^"]+)"/m)?.[1];
  if (!name || !main) return null;
  return { name, bundle: `${basename(main).replace(/\.[cm]?[jt]sx?$/, "")}.js` };
}

/**
 * The memory pass's DevTools sessions, each checked to be on the isolate it is meant for:
 * - uploads: the API Worker (wrangler.toml), through wrangler's inspector proxy, which relays to the
 *   first config's Worker only (and holds the one session workerd admits for it);
 * - queries: the engine Worker (wrangler.engine.toml), on workerd's own inspector port, target
 *   `core:user:<name>` (wrangler's proxy does not list it).
 * A session that cannot be opened or is on another isolate is left out: its figures are then not measured.
 */
async function connectIsolates(
  server: DevServer,
  workerPids: number[],
  withEngine: boolean,
): Promise<{ isolates: Isolates; notes: IsolateNote[] }> {
  const notes: IsolateNote[] = [];
  const open = async (
    role: IsolateNote["role"],
    config: string,
    connect: (name: string) => Promise<{ inspector: IsolateInspector | null; via: string }>,
  ): Promise<IsolateInspector | null> => {
    const worker = workerOf(server.snapshot, config);
    if (!worker) {
      log(`memory pass: no name or main in ${config}; ${role} memory is not measured in an isolate`);
      notes.push({ role, worker: null, via: null, target: null, script: null, isolate_id: null, ok: false });
      return null;
    }
    const { inspector, via } = await connect(worker.name);
    const checked = inspector ? await inspector.checkMainScript(worker.bundle) : null;
    const ok = !!inspector && !!checked?.ok;
    notes.push({
      role,
      worker: worker.name,
      via,
      target: inspector?.url ?? null,
      script: checked?.script ?? null,
      isolate_id: checked?.isolateId ?? null,
      ok,
    });
    if (!inspector)
      log(`memory pass: no DevTools session on ${worker.name} (${via}); ${role} isolate memory not measured`);
    else if (!ok) {
      log(
        `memory pass: the session ${inspector.url} (${via}) is not on ${worker.name}'s isolate (no ${worker.bundle} ` +
          `among its scripts); ${role} isolate memory not measured`,
      );
      inspector.close();
      return null;
    } else {
      log(
        `memory pass: ${role} read in ${worker.name}'s isolate ${checked!.isolateId ?? "?"} via ${via} (${checked!.script})`,
      );
      if (!inspector.canCollect) log(`memory pass: no GC can be forced in ${worker.name}'s isolate; no held figures`);
    }
    return ok ? inspector : null;
  };

  const api = await open("uploads", "wrangler.toml", async () => ({
    inspector: await IsolateInspector.connect(server.inspectorPort),
    via: `wrangler's inspector proxy, port ${server.inspectorPort}`,
  }));
  const engine = withEngine
    ? await open("queries", "wrangler.engine.toml", async (name) => {
        const port = await runtimeInspectorPort(workerPids);
        return {
          inspector: port === null ? null : await IsolateInspector.connect(port, `core:user:${name}`),
          via: port === null ? "workerd's inspector port not found" : `workerd's inspector, port ${port}`,
        };
      })
    : null;
  if (api && engine && notes[0]?.isolate_id && notes[0].isolate_id === notes[1]?.isolate_id) {
    log("memory pass: the API and engine sessions report the same isolate; neither is measured");
    api.close();
    engine.close();
    for (const note of notes) note.ok = false;
    return { isolates: { api: null, engine: null }, notes };
  }
  return { isolates: { api, engine }, notes };
}

/** The per-query memory budget in force: a --var override, else wrangler.toml's. */
function memoryBudget(vars: Record<string, string>): number | null {
  const text =
    vars.QUERY_MEMORY_BUDGET_BYTES ??
    readFileSync(join(ROOT, "wrangler.toml"), "utf8").match(/^QUERY_MEMORY_BUDGET_BYTES\s*=\s*"(\d+)"/m)?.[1];
  return text ? Number(text) : null;
}

/**
 * One tiny upload and query before measuring, so the first measured upload
 * and query do not pay for the isolates' start (module compile, sql.js init).
 */
async function warmUp(client: Client): Promise<void> {
  const path = join(BENCH, "data/warmup.csv");
  writeFileSync(path, 'id,ts,category,amount,qty,note\n1,2024-01-01T00:00:00,north-food,1.50,3,"a, ""b"""\n');
  const uploaded = await client.upload(ACCOUNT, DATASET, "warmup", path);
  if (uploaded.status !== 200) throw new Error(`warm-up upload failed: ${uploaded.status} ${uploaded.message}`);
  const queried = await client.query(
    `SELECT category, count(*), sum(amount) FROM ${ACCOUNT}.${DATASET}.warmup GROUP BY 1`,
  );
  if (!queried.ok) throw new Error(`warm-up query failed: ${queried.message}`);
  log(`warm-up: upload ${uploaded.seconds.toFixed(2)} s, query ${queried.seconds.toFixed(2)} s`);
}

function engineText(run: Timed): string {
  return run.ok ? `${run.seconds.toFixed(2)} s` : `FAILED (${run.message.slice(0, 120)})`;
}

async function uploadOnce(
  client: Client,
  file: BenchFile,
  pids: { worker: number[]; proxy: number[] },
  inspector: IsolateInspector | null,
  mode: MemoryMode | null,
): Promise<Omit<UploadRun, "run">> {
  let isolateHeap: HeapReport | null = null;
  let isolateHeld: HeldReport | null = null;
  const work = async () => {
    const upload = () => client.upload(ACCOUNT, DATASET, DATA_NAME[file.label], file.path);
    if (!inspector || !mode) return upload();
    if (mode === "held") {
      const measured = await inspector.measureHeld(upload);
      isolateHeld = measured.heap;
      return measured.value;
    }
    const measured = await inspector.measure(upload);
    isolateHeap = measured.heap;
    return measured.value;
  };
  let workerRss: RssReport | null = null;
  let proxyRss: RssReport | null = null;
  try {
    const outer = await measureRss(pids.worker, async () => {
      const inner = await measureRss(pids.proxy, work);
      proxyRss = inner.rss;
      return inner.value;
    });
    workerRss = pids.worker.length && !outer.rss.lost ? outer.rss : null;
    const response = outer.value;
    const ok = response.status === 200;
    // Untimed: the column images are built in the background; the next upload or query waits for them.
    const ready = ok ? await client.waitQueryReady(ACCOUNT, DATASET, DATA_NAME[file.label]) : null;
    return {
      readySeconds: ready?.ready ? ready.seconds : null,
      imageBytes: ready?.imageBytes ?? null,
      file: file.label,
      ok,
      message: ok ? response.message : `${response.status} ${response.message}`,
      seconds: response.seconds,
      workerRss,
      proxyRss: pids.proxy.length && !(proxyRss as RssReport | null)?.lost ? proxyRss : null,
      isolateHeap,
      isolateHeld,
      mode,
    };
  } catch (error) {
    return {
      file: file.label,
      ok: false,
      message: error instanceof Error ? error.message : String(error),
      seconds: 0,
      workerRss,
      proxyRss,
      isolateHeap,
      isolateHeld,
      mode,
      readySeconds: null,
      imageBytes: null,
    };
  }
}

async function caseOnce(
  client: Client,
  file: BenchFile,
  query: QueryDef,
  uploaded: boolean,
  reference: boolean,
  workerPids: number[],
  inspector: IsolateInspector | null,
  mode: MemoryMode | null,
): Promise<Omit<CaseRun, "run">> {
  const dqsSql = query.sql.replaceAll("{t}", `${ACCOUNT}.${DATASET}.${DATA_NAME[file.label]}`);
  const localSql = query.sql.replaceAll("{t}", "t");
  let dqs: CaseRun["dqs"];
  let workerRssDelta: number | null = null;
  let isolateHeapDelta: number | null = null;
  let isolatePeakTotal: number | null = null;
  let isolateHeldDelta: number | null = null;
  let isolateHeldPeakTotal: number | null = null;
  let isolateHeldSamples: number | null = null;
  let notes: string[] = [];
  let dqsRows: string[][] | null = null;
  if (!uploaded) dqs = { ok: false, message: "the upload of this file failed in this run", seconds: 0 };
  else {
    try {
      const measured = await measureRss(workerPids, async () => {
        if (!inspector || !mode) return client.query(dqsSql);
        if (mode === "held") {
          const held = await inspector.measureHeld(() => client.query(dqsSql));
          isolateHeldDelta = held.heap?.delta ?? null;
          isolateHeldPeakTotal = held.heap ? held.heap.peak.used + held.heap.peak.backing : null;
          isolateHeldSamples = held.heap?.samples ?? null;
          return held.value;
        }
        const inner = await inspector.measure(() => client.query(dqsSql));
        isolateHeapDelta = inner.heap?.delta ?? null;
        isolatePeakTotal = inner.heap ? inner.heap.peak.used + inner.heap.peak.backing : null;
        return inner.value;
      });
      workerRssDelta = workerPids.length && !measured.rss.lost ? measured.rss.delta : null;
      const result = measured.value;
      if (result.ok) notes = result.notes;
      dqs = result.ok
        ? { ok: true, seconds: result.seconds, status: result.status }
        : { ok: false, seconds: result.seconds, message: result.message, status: result.status };
      if (result.ok) dqsRows = parseCsv(result.csv);
    } catch (error) {
      dqs = { ok: false, seconds: 0, message: `bench: ${error instanceof Error ? error.message : String(error)}` };
    }
  }
  const sqlite3 = reference ? await runSqlite3(file.path, file.gzip, localSql) : null;
  const duckdb = reference ? await runDuckdb(file.path, localSql) : null;
  const mismatches: string[] = [];
  const check = (name: string, other: EngineRun | null, base: string[][] | null, baseName: string) => {
    if (!other?.ok || !base) return;
    const difference = compareRows(base, other.rows, query.order);
    if (difference) mismatches.push(`${baseName} vs ${name}: ${difference}`);
  };
  check("sqlite3", sqlite3, dqsRows, "dqs");
  check("duckdb", duckdb, dqsRows, "dqs");
  // Without a dqs result, the two references still check each other.
  if (!dqsRows && sqlite3?.ok) check("duckdb", duckdb, sqlite3.rows, "sqlite3");
  return {
    file: file.label,
    query: query.id,
    dqs,
    resultRows: dqsRows ? dqsRows.length - 1 : null,
    workerRssDelta,
    isolateHeapDelta,
    isolatePeakTotal,
    isolateHeldDelta,
    isolateHeldPeakTotal,
    isolateHeldSamples,
    mode,
    notes,
    sqlite3: sqlite3 && (sqlite3.ok ? { ok: true, seconds: sqlite3.seconds } : sqlite3),
    duckdb: duckdb && (duckdb.ok ? { ok: true, seconds: duckdb.seconds } : duckdb),
    matchesSqlite3: dqsRows && sqlite3?.ok ? !mismatches.some((m) => m.startsWith("dqs vs sqlite3")) : null,
    matchesDuckdb: dqsRows && duckdb?.ok ? !mismatches.some((m) => m.startsWith("dqs vs duckdb")) : null,
    mismatches,
  };
}

const START = "<!-- bench:latest:start -->";
const END = "<!-- bench:latest:end -->";

/** Writes the tables between the bench:latest markers of bench/README.md and of the project's README. */
function updateReadme(markdown: string): void {
  // The table's own title becomes a sub-heading of the README's section.
  const body = markdown.replace(/^# (.*)\n+/, "**$1.** ").replace(/^## /gm, "#### ");
  for (const path of [join(BENCH, "README.md"), join(ROOT, "README.md")]) {
    const text = readFileSync(path, "utf8");
    const from = text.indexOf(START);
    const to = text.indexOf(END);
    if (from < 0 || to < from) {
      log(`${path}: no ${START} … ${END} section; not updated`);
      continue;
    }
    writeFileSync(path, `${text.slice(0, from + START.length)}\n\n${body.trim()}\n\n${text.slice(to)}`);
    const prettier = spawnSync(join(ROOT, "node_modules/.bin/prettier"), ["--write", path], { encoding: "utf8" });
    if (prettier.status !== 0) log(`${path}: prettier failed: ${prettier.stderr}`);
    log(`updated ${path}`);
  }
}

await main();
