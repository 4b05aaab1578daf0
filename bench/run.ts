/**
 * `npm run bench`: the service end to end (wrangler dev, real HTTP API)
 * against the sqlite3 tool and DuckDB on the same generated files and
 * queries. See bench/README.md.
 *
 *   npm run bench                  5 runs
 *   npm run bench -- --quick       1 run
 *   npm run bench -- --runs 3 --files 100k,1m --queries Q1 --var QUERY_MEMORY_BUDGET_BYTES=200000000
 *   npm run bench -- --uploads-only   uploads only (no queries, no references)
 *   npm run bench -- --reuse-only     Q1 run once, then repeated with result reuse (default file: 1m)
 *   npm run bench -- --readme      also put the table into bench/README.md
 *   npm run bench -- --quick --files 100k --out threshold-store --var TABLE_STORE_MIN_ROWS=1
 *   npm run bench -- --pages       result pages (page 900 of the 1M-row result) and formats only (bench/pages.ts)
 *   npm run bench -- --estimates   table-store estimates against runs, and a runaway query's effect (bench/estimates.ts)
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { compareRows, type RowOrder } from "./compare.ts";
import { CliUploader } from "./cli.ts";
import { Client, login, postMultipart, type TableStoreInfo } from "./dqs.ts";
import {
  duckdbVersion,
  importSqlite3File,
  LoadedDuckdb,
  parseCsv,
  querySqlite3File,
  runDuckdb,
  runSqlite3,
  sqlite3Version,
  type EngineRun,
} from "./engines.ts";
import { FILE_LABELS, prepareData, writeLookup, type BenchFile, type FileLabel } from "./generate.ts";
import {
  renderMarkdown,
  summarize,
  type CaseRun,
  type CliUploadRun,
  type ConcurrencyRun,
  type FirstAnswerRun,
  type ReuseRun,
  type IsolateNote,
  type MemoryMode,
  type Timed,
  type UploadRun,
} from "./report.ts";
import { eitherIsolate, IsolateInspector, type HeapReport, type HeldReport, type Measurer } from "./inspector.ts";
import { runEstimatesBench } from "./estimates.ts";
import { runPagesBench } from "./pages.ts";
import {
  findDescendants,
  killAllStarted,
  measureRss,
  ROOT,
  startFloorWorker,
  startWranglerDev,
  type FloorServer,
  varsFromOptions,
  type DevServer,
  type RssReport,
} from "./server.ts";

const BENCH = join(ROOT, "bench");
const ACCOUNT = "bench";
const DATASET = "bench";

export interface QueryDef {
  id: "Q1" | "Q2" | "Q3" | "Q4";
  /** `{t}` stands for the table, `{lookup}` for the lookup table (bench/data/lookup.csv). */
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
  {
    id: "Q4",
    sql: "SELECT l.label, count(*), sum(t.amount) FROM {t} t JOIN {lookup} l ON l.category = t.category GROUP BY 1 ORDER BY 1",
    order: { ordered: true },
  },
];

/** The lookup table's data item, in the bench dataset. */
const LOOKUP = "lookup";

/**
 * The memory pass's measures, in order: each upload (and each query) is run
 * once per entry. "held": readings after forced full GCs (live memory);
 * "garbage": readings as they come, garbage not yet collected included.
 * Forcing GCs changes what the other measure would see, so they never share a run.
 */
const MEMORY_PASS_UPLOADS: MemoryMode[] = ["held", "held", "held", "garbage"];
/** The 5M-row files' uploads (17 s each, and a table store built after each): one held, one garbage. */
const MEMORY_PASS_BIG_UPLOADS: MemoryMode[] = ["held", "garbage"];
const MEMORY_PASS_QUERIES: MemoryMode[] = ["held", "garbage"];

interface Collected {
  uploads: UploadRun[];
  cliUploads: CliUploadRun[];
  cases: CaseRun[];
  firstAnswers: FirstAnswerRun[];
}

/**
 * The memory pass's DevTools sessions: uploads are read in the API Worker's isolate; queries where they run:
 * sql.js queries in the engine Worker's, table-store queries in the table store Worker's (`dqs-store`, whose
 * class TableStore is: its Durable Objects run in that isolate, in a `wrangler dev` process of its own).
 */
interface Isolates {
  api: IsolateInspector | null;
  /** The engine's quick and long lanes, read together (a query moved on runs in the long one). */
  engine: Measurer | null;
  store: IsolateInspector | null;
  /** Every session opened, to close. */
  sessions: IsolateInspector[];
}

/** The data item each file is uploaded as. */
const DATA_NAME: Record<FileLabel, string> = {
  "100k": "t100k",
  "1m": "t1m",
  "1m.gz": "t1m_gz",
  "5m": "t5m",
  "5m.gz": "t5m_gz",
};

/** How long the bench waits for a data item to become query-ready, or for a query (a 5M-row table store takes a while). */
const READY_TIMEOUT_MS = 900_000;
const QUERY_TIMEOUT_MS = 900_000;

/** The files of a run without --files (see bench/README.md for the run times). */
const DEFAULT_FILES = "100k,1m,1m.gz";
/** The file the reuse case runs on in a whole run, and the default of --reuse-only. */
const REUSE_FILE: FileLabel = "1m";
/** How often the reuse case repeats Q1 after its first run. */
const REUSE_REPEATS = 5;

const log = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

function options() {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      runs: { type: "string" },
      files: { type: "string" },
      queries: { type: "string", default: "Q1,Q2,Q3,Q4" },
      out: { type: "string", default: "latest" },
      concurrency: { type: "string", default: "20" },
      "no-floor": { type: "boolean", default: false },
      "no-cli": { type: "boolean", default: false },
      var: { type: "string", multiple: true, default: [] },
      readme: { type: "boolean", default: false },
      "no-reference": { type: "boolean", default: false },
      "no-inspector": { type: "boolean", default: false },
      "uploads-only": { type: "boolean", default: false },
      pages: { type: "boolean", default: false },
      page: { type: "string", default: "900" },
      "reuse-only": { type: "boolean", default: false },
      estimates: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(
      [
        "npm run bench -- [--quick] [--runs N] [--files 100k,1m,1m.gz,5m,5m.gz] [--queries Q1,Q2,Q3,Q4]",
        "                 [--var NAME=VALUE ...] [--no-reference] [--no-inspector] [--no-floor] [--no-cli] [--uploads-only]",
        "                 [--reuse-only]",
        "                 [--concurrency N] [--out NAME] [--readme]",
        "npm run bench -- --pages [--files 1m] [--page 900] [--runs N] [--out pages]",
        "npm run bench -- --estimates [--files 1m] [--runs 3] [--var NAME=VALUE ...] [--out estimates]",
        "  --quick         one run (default: 5)",
        `  --files         default ${DEFAULT_FILES}; all: ${FILE_LABELS.join(",")}`,
        "  --concurrency   N concurrent Q1 on the 5m file from N users, after the timed runs (default 20; 0: none)",
        "  --out NAME      write bench/results/NAME.json and .md (default: latest)",
        "  --no-floor      no upload floor (the bare Worker streaming the same bytes into local R2)",
        "  --no-cli        no upload through the command line (dqs upload of the 1m file, else of the first file)",
        "  --var           passed to wrangler dev as --var NAME:VALUE (e.g. QUERY_MEMORY_BUDGET_BYTES=...)",
        "  --no-reference  skip sqlite3 and DuckDB",
        "  --no-inspector  no memory pass (the isolates' heaps read through DevTools: uploads in the API Worker, queries in the engine)",
        "  --uploads-only  upload the files (timed runs and memory pass) but run no query",
        `  --reuse-only    upload the files (default ${REUSE_FILE}) once, then on each: Q1 run once and repeated ${REUSE_REPEATS} times with result reuse`,
        `                  (a whole run does this on ${REUSE_FILE} after the timed runs); nothing else`,
        "  --readme        also write the tables into bench/README.md (between the bench:latest markers)",
        "  --pages         only result pages and formats: page --page (default 900) of SELECT * on one file (default 1m)",
        "  --estimates     only estimates and bounded work, on one file (default 1m) in a table store: Q1-Q4 and two",
        "                  self-joins, validate's EstimatedSeconds against the run (each --runs times, default 3); what",
        "                  the estimate adds to Q1; other users' latency during runaway queries (QUERY_TIME_LIMIT_SECONDS 10)",
        "",
      ].join("\n"),
    );
    process.exit(0);
  }
  const reuseOnly = values["reuse-only"];
  const runs = reuseOnly ? 1 : values.runs ? Number(values.runs) : values.quick ? 1 : 5;
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, not ${values.runs}`);
  const named = values.files ?? (reuseOnly ? REUSE_FILE : DEFAULT_FILES);
  const files = (named === "all" ? FILE_LABELS.join(",") : named).split(",").map((f) => f.trim());
  for (const f of files) if (!(f in DATA_NAME)) throw new Error(`unknown file ${f}; use ${FILE_LABELS.join(", ")}`);
  const queries =
    values["uploads-only"] || reuseOnly ? [] : values.queries.split(",").map((q) => q.trim().toUpperCase());
  for (const q of queries)
    if (!QUERIES.some((d) => d.id === q))
      throw new Error(`unknown query ${q}; use ${QUERIES.map((d) => d.id).join(", ")}`);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 0)
    throw new Error(`--concurrency must be a whole number, not ${values.concurrency}`);
  if (!/^[\w.-]+$/.test(values.out)) throw new Error(`--out wants a plain name, not ${values.out}`);
  const vars = varsFromOptions(values.var);
  const page = Number(values.page);
  if (!Number.isInteger(page) || page < 1) throw new Error(`--page must be a page number from 1, not ${values.page}`);
  return {
    pages: values.pages ? { page, file: (values.files === undefined ? "1m" : files[0]) as FileLabel } : null,
    estimates: values.estimates
      ? {
          file: (values.files === undefined ? "1m" : files[0]) as FileLabel,
          repeats: values.runs ? runs : 3,
          out: values.out === "latest" ? "estimates" : values.out,
        }
      : null,
    runs,
    files: files as FileLabel[],
    queries,
    vars,
    out: values.out,
    concurrency: reuseOnly ? 0 : concurrency,
    floor: !values["no-floor"] && !reuseOnly,
    cli: !values["no-cli"] && !reuseOnly,
    readme: values.readme,
    reference: !values["no-reference"] && !reuseOnly,
    inspector: !values["no-inspector"] && !reuseOnly,
    reuseOnly,
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

/**
 * The workerd processes of the service's three `wrangler dev` process groups (API, engine, table stores). Each
 * wrangler runs two: its proxy (serving the entry socket) and the one that runs its Worker (started with
 * `--inspector-addr`). `worker`: the three Worker processes, whose RSS is summed (an upload runs in the API's, the
 * store build it starts in the store's, a query in the engine's or the store's); `proxy`: the three proxies.
 */
function workerdProcesses(server: DevServer): { worker: number[]; proxy: number[] } {
  const worker: number[] = [];
  const proxy: number[] = [];
  for (const group of Object.values(server.pids())) {
    if (!group) continue;
    for (const p of findDescendants(group, "workerd")) {
      let cmdline = "";
      try {
        cmdline = readFileSync(`/proc/${p.pid}/cmdline`, "utf8").replace(/\0/g, " ");
      } catch {
        continue;
      }
      (cmdline.includes("--inspector-addr=") ? worker : proxy).push(p.pid);
    }
  }
  return { worker, proxy };
}

async function main() {
  const opts = options();
  if (opts.pages) {
    process.once("exit", killAllStarted);
    await runPagesBench(
      { ...opts.pages, repeats: opts.runs, vars: opts.vars, out: opts.out === "latest" ? "pages" : opts.out },
      log,
    );
    return;
  }
  if (opts.estimates) {
    process.once("exit", killAllStarted);
    await runEstimatesBench({ ...opts.estimates, vars: opts.vars, queries: QUERIES }, log);
    return;
  }
  const started = new Date();
  log(`runs: ${opts.runs}; files: ${opts.files.join(", ")}; queries: ${opts.queries.join(", ")}`);
  const files = await prepareData(join(BENCH, "data"), log, opts.files);
  const lookupPath = writeLookup(join(BENCH, "data"));
  const queries = QUERIES.filter((q) => opts.queries.includes(q.id));
  const q1 = queries.find((q) => q.id === "Q1") ?? null;
  const info = await machine();
  log(
    `machine: ${info.cpu}, ${info.cores} cores, node ${info.node}, wrangler ${info.wrangler}, sqlite3 ${info.sqlite3}, duckdb ${info.duckdb}`,
  );

  const timed: Collected = { uploads: [], cliUploads: [], cases: [], firstAnswers: [] };
  const memory: Collected = { uploads: [], cliUploads: [], cases: [], firstAnswers: [] };
  // The command line uploads one file per timed run: 1m (the upload targets' file) when it runs, else the first.
  const cliFile = opts.cli ? (files.find((f) => f.label === "1m") ?? files[0] ?? null) : null;
  let cli: CliUploader | null = null;
  let concurrency: ConcurrencyRun | null = null;
  const reuse: ReuseRun[] = [];
  let server: DevServer | null = null;
  let floor: FloorServer | null = null;
  const stopServer = async () => {
    const s = server;
    const f = floor;
    server = null;
    floor = null;
    await s?.stop();
    await f?.stop();
  };
  /** The repeat reference's sqlite3 database files, imported once per file and bench (label → path). */
  const sqliteFiles = new Map<string, string>();
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
    if (opts.floor && files.length) {
      log("starting the upload floor's Worker (bench/floor, wrangler dev) ...");
      floor = await startFloorWorker();
      log(`upload floor on ${floor.url}; wrangler pid ${floor.pid}`);
    }
    log("starting the local service (three wrangler dev processes, fresh state) ...");
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
    const groups = server.pids();
    log(
      `local service on ${server.url}; wrangler pids api ${groups.api} engine ${groups.engine} store ${groups.store}; ` +
        `workerd Worker processes ${pids.worker.join(",")}, proxies ${pids.proxy.join(",")}`,
    );
    if (pids.worker.length === 0) log("no workerd process found under wrangler: workerd RSS is not measured");
    else if (pids.worker.length !== 3) log(`${pids.worker.length} workerd Worker processes found, not 3`);
    const client = new Client(server.url, await login(server.url, ACCOUNT));
    await client.createDataset(ACCOUNT, DATASET);
    if (cliFile) cli = await CliUploader.start(server.url, ACCOUNT);
    await warmUp(client);
    if (queries.some((q) => q.sql.includes("{lookup}"))) await uploadLookup(client, lookupPath);
    /** Which engine ran each (file, query) in the timed runs: the memory pass reads the isolate it runs in. */
    const engineOf = new Map<string, string>();

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
      const firstRows = new Map<string, string[][]>();
      const uploadModes = (file: BenchFile) =>
        memory ? (file.rows >= 5_000_000 ? MEMORY_PASS_BIG_UPLOADS : memory.uploads) : [null];
      for (const [file, mode] of files.flatMap((f) => uploadModes(f).map((m) => [f, m] as const))) {
        // Timed runs only: the floor upload of the same bytes right before, and the first answer (Q1 right after).
        const floorRun = !memory && floor ? await floorUpload(floor, file) : null;
        const result = await uploadOnce(
          client,
          file,
          currentPids(),
          isolates?.api ?? null,
          mode,
          floorRun,
          memory ? null : q1,
        );
        const { firstAnswer, ...upload } = result;
        into.uploads.push({ run, ...upload });
        if (firstAnswer) {
          const { rows, ...kept } = firstAnswer;
          into.firstAnswers.push({ run, ...kept, matchesSqlite3: null, mismatch: null });
          if (rows) firstRows.set(file.label, rows);
        }
        if (result.ok) uploaded.add(file.label);
        const cliRun = !memory && cli && file === cliFile ? await cliUpload(client, cli, file, run) : null;
        if (cliRun) into.cliUploads.push(cliRun);
        log(
          `  upload ${file.label}: ${result.ok ? `${(file.bytes / 1e6 / result.seconds).toFixed(1)} MB/s` : `FAILED ${result.message}`}` +
            (floorRun
              ? floorRun.ok
                ? ` (floor ${(file.bytes / 1e6 / floorRun.seconds).toFixed(1)} MB/s)`
                : ` (floor FAILED ${floorRun.message})`
              : "") +
            (result.workerRss ? `, workerd RSS +${(result.workerRss.delta / 1e6).toFixed(1)} MB` : "") +
            (result.isolateHeap ? `, isolate incl. garbage +${(result.isolateHeap.delta / 1e6).toFixed(1)} MB` : "") +
            (result.isolateHeld
              ? `, isolate held +${(result.isolateHeld.delta / 1e6).toFixed(1)} MB (${result.isolateHeld.samples} readings after GC)`
              : "") +
            (firstAnswer
              ? firstAnswer.ok
                ? `, first answer (Q1) ${firstAnswer.seconds.toFixed(2)} s (${firstAnswer.engine ?? "?"})`
                : `, first answer FAILED (${(firstAnswer.message ?? "").slice(0, 160)})`
              : "") +
            (result.ok
              ? result.readySeconds === null
                ? `, NOT query-ready${result.tableStore ? ` (table store ${result.tableStore.State}: ${result.tableStore.Message ?? ""})` : ""}`
                : `, query-ready ${result.readySeconds.toFixed(2)} s later${result.tableStore ? ` (table store ${result.tableStore.Rows} rows, ${((result.tableStore.Bytes ?? 0) / 1e6).toFixed(0)} MB)` : ""}`
              : "") +
            (cliRun
              ? cliRun.ok
                ? `; through the CLI ${(file.bytes / 1e6 / cliRun.seconds).toFixed(1)} MB/s (${cliRun.seconds.toFixed(2)} s)`
                : `; through the CLI FAILED ${cliRun.message}`
              : ""),
        );
      }
      const queryModes = memory?.queries ?? [null];
      for (const file of files) {
        const refs = reference && queries.length ? await repeatReferences(file, lookupPath, sqliteFiles) : null;
        try {
          for (const [query, mode] of queries.flatMap((q) => queryModes.map((m) => [q, m] as const))) {
            const engine = engineOf.get(`${file.label}/${query.id}`);
            // A table-store query runs in the table store Worker's isolate; a sql.js one in the engine Worker's.
            const inspector = !isolates ? null : engine === "store" ? isolates.store : isolates.engine;
            const record = await caseOnce(
              client,
              file,
              query,
              lookupPath,
              uploaded.has(file.label),
              reference,
              refs,
              currentPids().worker,
              inspector,
              inspector === isolates?.store ? "dqs-store" : inspector ? "dqs-engine (its two lanes)" : null,
              mode,
            );
            const { referenceRows, ...stored } = record;
            into.cases.push({ run, ...stored });
            if (!memory && record.engine) engineOf.set(`${file.label}/${query.id}`, record.engine);
            // The first answer's rows against the same query's reference rows.
            const first = firstRows.get(file.label);
            const answer = into.firstAnswers.find((a) => a.run === run && a.file === file.label);
            if (query.id === "Q1" && first && referenceRows && answer) {
              answer.mismatch = compareRows(first, referenceRows, query.order);
              answer.matchesSqlite3 = answer.mismatch === null;
            }
            log(
              `  ${file.label} ${query.id}: dqs ${record.dqs.ok ? `${record.dqs.seconds.toFixed(2)} s (${record.engine ?? "?"})` : `FAILED (${record.dqs.message.slice(0, 160)})`}` +
                (record.sqlite3 ? `, sqlite3 ${engineText(record.sqlite3)}` : "") +
                (record.duckdb ? `, duckdb ${engineText(record.duckdb)}` : "") +
                (record.sqlite3Query ? `, sqlite3 query ${engineText(record.sqlite3Query)}` : "") +
                (record.duckdbQuery ? `, duckdb query ${engineText(record.duckdbQuery)}` : "") +
                (record.isolateHeapDelta !== null
                  ? `, isolate incl. garbage +${(record.isolateHeapDelta / 1e6).toFixed(1)} MB`
                  : "") +
                (record.isolateHeldDelta !== null
                  ? `, isolate held +${(record.isolateHeldDelta / 1e6).toFixed(1)} MB (${record.isolateHeldSamples} readings, ${record.isolateWorker})`
                  : "") +
                (record.mismatches.length ? `; MISMATCH ${record.mismatches.join("; ")}` : ""),
            );
          }
        } finally {
          refs?.duckdb?.close();
        }
      }
    };

    for (let run = 1; run <= opts.runs; run++) {
      log(`run ${run}/${opts.runs}`);
      await pass(run, null, opts.reference, timed);
    }
    const big = files.find((f) => f.label === "5m");
    if (opts.concurrency > 0 && big && q1 && timed.uploads.some((u) => u.file === "5m" && u.ok)) {
      const expected = timed.cases.find((c) => c.file === "5m" && c.query === "Q1" && c.dqs.ok);
      concurrency = await concurrentQueries(server.url, client, big, q1, opts.concurrency);
      if (!expected) log("concurrency: no timed Q1 on 5m succeeded to compare the rows with");
    }
    // Q1 repeated with reuse: on every file with --reuse-only, else on the 1M-row file when Q1 ran.
    const reuseQuery = opts.reuseOnly ? QUERIES.find((q) => q.id === "Q1")! : q1;
    for (const file of files.filter((f) => opts.reuseOnly || f.label === REUSE_FILE)) {
      if (!reuseQuery || !timed.uploads.some((u) => u.file === file.label && u.ok)) continue;
      const run = await reuseCase(client, file, reuseQuery);
      reuse.push(run);
      const repeats = run.repeats.map((r) => (r.ok ? `${(r.seconds * 1000).toFixed(0)} ms` : "FAILED")).join(", ");
      log(
        `  reuse ${file.label} ${reuseQuery.id}: first ${run.first.ok ? `${run.first.seconds.toFixed(2)} s` : `FAILED (${run.first.message})`}, ` +
          `repeats ${repeats}; reused ${run.repeats.filter((r) => r.reused).length} of ${run.repeats.length}`,
      );
    }
    // A DevTools session puts the isolate in debugging mode (WebAssembly stays in its baseline tier:
    // queries run ~1.5x slower), so the isolate's memory is read in a pass of its own, never timed.
    if (opts.inspector) {
      // The engine's session only when some query ran in sql.js, the store's when some ran in a table store.
      const sqljs = queries.length > 0 && [...engineOf.values()].some((e) => e !== "store");
      const inStore = queries.length > 0 && [...engineOf.values()].some((e) => e === "store");
      const connected = await connectIsolates(server, sqljs, inStore);
      isolateNotes = connected.notes;
      const { api, engine, store, sessions } = connected.isolates;
      if (!api && !engine && !store)
        log("memory pass: no isolate could be inspected; the isolates' memory is not measured");
      else {
        log("memory pass (DevTools attached; its times are not used)");
        try {
          await pass(0, connected.isolates, false, memory, {
            uploads: MEMORY_PASS_UPLOADS,
            queries: MEMORY_PASS_QUERIES,
          });
        } finally {
          for (const session of sessions) session.close();
        }
      }
    }
  } catch (error) {
    serverNote = `the bench stopped early: ${error instanceof Error ? error.message : String(error)}`;
    log(serverNote);
    if (server) log(`wrangler output (tail):\n${(server as DevServer).output().slice(-3000)}`);
  } finally {
    if (server) writeFileSync(join(BENCH, "data/wrangler-dev.log"), (server as DevServer).output());
    if (floor) writeFileSync(join(BENCH, "data/floor-wrangler-dev.log"), (floor as FloorServer).output());
    await stopServer();
    cli?.close();
    for (const path of sqliteFiles.values()) rmSync(path, { force: true });
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
    cliUploads: timed.cliUploads,
    cases: timed.cases,
    firstAnswers: timed.firstAnswers,
    concurrency,
    reuse,
    memory,
    isolates: isolateNotes,
    note: serverNote,
  });
  const markdown = renderMarkdown(summary);
  mkdirSync(join(BENCH, "results"), { recursive: true });
  writeFileSync(join(BENCH, `results/${opts.out}.json`), JSON.stringify(summary, null, 2) + "\n");
  writeFileSync(join(BENCH, `results/${opts.out}.md`), markdown);
  if (opts.readme) updateReadme(markdown);
  process.stdout.write(markdown);
  log(
    `wrote bench/results/${opts.out}.md and bench/results/${opts.out}.json; ${((Date.now() - started.getTime()) / 60000).toFixed(1)} minutes`,
  );
  process.exitCode = serverNote ? 1 : 0;
}

/** A Worker's `name` and the file wrangler bundles its `main` to (`src/worker/engine.ts` → `engine.js`), from its config. */
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
 * The memory pass's DevTools sessions, one per Worker, each through the inspector of that Worker's own
 * `wrangler dev` process (wrangler's inspector proxy relays to the process's one Worker): uploads in the API
 * Worker (wrangler.toml), sql.js queries in the engine Worker (wrangler.engine.toml), table-store queries in the
 * table store Worker (wrangler.store.toml). Each is checked to be on the isolate it is meant for; a session that
 * cannot be opened or is on another isolate is left out: its figures are then not measured.
 */
async function connectIsolates(
  server: DevServer,
  withEngine: boolean,
  withStore: boolean,
): Promise<{ isolates: Isolates; notes: IsolateNote[] }> {
  const notes: IsolateNote[] = [];
  const ports = server.inspectorPorts();
  const open = async (role: IsolateNote["role"], config: string, port: number | undefined) => {
    const worker = workerOf(server.snapshot, config);
    if (!worker) {
      log(`memory pass: no name or main in ${config}; ${role} memory is not measured in an isolate`);
      notes.push({ role, worker: null, via: null, target: null, script: null, isolate_id: null, ok: false });
      return null;
    }
    const via = `wrangler's inspector proxy of the ${config} process, port ${port ?? "?"}`;
    const inspector = port === undefined ? null : await IsolateInspector.connect(port);
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

  const api = await open("uploads", "wrangler.toml", ports.api);
  const quick = withEngine ? await open("queries", "wrangler.engine.toml", ports.engine) : null;
  const long = withEngine ? await open("long queries", "wrangler.engine.toml", ports["engine-long"]) : null;
  const engine = quick && long ? eitherIsolate(quick, long) : (quick ?? long);
  const store = withStore ? await open("store queries", "wrangler.store.toml", ports.store) : null;
  const sessions = [api, quick, long, store].filter((session) => session !== null);
  return { isolates: { api, engine, store, sessions }, notes };
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

/** Q4's lookup table, uploaded once (its own small data item: column images), waited for until query-ready. */
async function uploadLookup(client: Client, path: string): Promise<void> {
  const uploaded = await client.upload(ACCOUNT, DATASET, LOOKUP, path);
  if (uploaded.status !== 200) throw new Error(`lookup upload failed: ${uploaded.status} ${uploaded.message}`);
  const ready = await client.waitQueryReady(ACCOUNT, DATASET, LOOKUP, READY_TIMEOUT_MS);
  if (!ready.ready) throw new Error(`the lookup table did not become query-ready in ${ready.seconds.toFixed(0)} s`);
  log(`lookup table: uploaded in ${uploaded.seconds.toFixed(2)} s, query-ready ${ready.seconds.toFixed(2)} s later`);
}

/**
 * `dqs upload` of the same file to a data item of its own, after the bench's upload of it was query-ready (an
 * upload while the previous one's column images or table store are built shares workerd with that build, and
 * takes several times longer); waited for until query-ready in turn, for the same reason.
 */
async function cliUpload(client: Client, cli: CliUploader, file: BenchFile, run: number): Promise<CliUploadRun> {
  const name = `${DATA_NAME[file.label]}_cli`;
  const uploaded = await cli.upload(ACCOUNT, DATASET, name, file.path);
  const ready = uploaded.ok ? await client.waitQueryReady(ACCOUNT, DATASET, name, READY_TIMEOUT_MS) : null;
  return { run, file: file.label, ...uploaded, readySeconds: ready?.ready ? ready.seconds : null };
}

/** The upload floor: the same multipart bytes POSTed to the bare Worker that pipes them into local R2. */
async function floorUpload(floor: FloorServer, file: BenchFile): Promise<Timed> {
  try {
    const answer = await postMultipart(new URL(`${floor.url}/${DATA_NAME[file.label]}`), file.path);
    return answer.status === 200
      ? { ok: true, seconds: answer.seconds }
      : { ok: false, seconds: answer.seconds, message: `${answer.status} ${answer.message.slice(0, 200)}` };
  } catch (error) {
    return { ok: false, seconds: 0, message: error instanceof Error ? error.message : String(error) };
  }
}

/** The repeat references of one file: a sqlite3 database file (imported once per bench) and a loaded DuckDB. */
interface RepeatReferences {
  sqliteDb: string | null;
  sqliteError: string | null;
  duckdb: LoadedDuckdb | null;
  duckdbError: string | null;
}

async function repeatReferences(
  file: BenchFile,
  lookupPath: string,
  sqliteFiles: Map<string, string>,
): Promise<RepeatReferences> {
  let sqliteDb = sqliteFiles.get(file.label) ?? null;
  let sqliteError: string | null = null;
  if (!sqliteDb) {
    const path = join(BENCH, `data/ref-${file.label}.sqlite`);
    const imported = await importSqlite3File(file.path, file.gzip, lookupPath, path);
    if (imported.ok) {
      sqliteFiles.set(file.label, path);
      sqliteDb = path;
      log(
        `  ${file.label}: sqlite3 imported it into ${basename(path)} in ${imported.seconds.toFixed(2)} s (repeat reference)`,
      );
    } else sqliteError = imported.message;
  }
  let duckdb: LoadedDuckdb | null = null;
  let duckdbError: string | null = null;
  try {
    duckdb = await LoadedDuckdb.load(file.path, lookupPath);
    log(`  ${file.label}: DuckDB loaded it in ${duckdb.loadSeconds.toFixed(2)} s (repeat reference)`);
  } catch (error) {
    duckdbError = `duckdb: ${error instanceof Error ? error.message : String(error)}`;
  }
  return { sqliteDb, sqliteError, duckdb, duckdbError };
}

/**
 * `count` users (bench-c01 …, each logged in, granted read on the bench dataset) submit Q1 on the 5m file at
 * once; every query must finish. Each user has its own fair share (QUERY_MAX_RUNNING_PER_USER is 1 under
 * wrangler dev), so none waits behind another's share.
 */
async function concurrentQueries(
  baseUrl: string,
  owner: Client,
  file: BenchFile,
  query: QueryDef,
  count: number,
): Promise<ConcurrencyRun> {
  const sql = query.sql.replaceAll("{t}", `${ACCOUNT}.${DATASET}.${DATA_NAME[file.label]}`);
  log(`concurrency: ${count} users log in and get read access to ${ACCOUNT}/${DATASET} ...`);
  const clients: Client[] = [];
  for (let i = 1; i <= count; i++) {
    const name = `bench-c${String(i).padStart(2, "0")}`;
    clients.push(new Client(baseUrl, await login(baseUrl, name)));
    await owner.grant(ACCOUNT, DATASET, name, "read");
  }
  log(`concurrency: ${count} × ${query.id} on ${file.label} at once ...`);
  const started = performance.now();
  const runs = await Promise.all(
    clients.map(async (c, i) => {
      const result = await c.query(sql, { pollMs: 200, timeoutMs: QUERY_TIMEOUT_MS });
      const ended = (performance.now() - started) / 1000;
      return { user: i + 1, result, ended };
    }),
  );
  const wall = (performance.now() - started) / 1000;
  const first = runs.find((r) => r.result.ok);
  const firstRows = first?.result.ok ? parseCsv(first.result.csv) : null;
  const queries = runs.map(({ user, result, ended }) => {
    const rows = result.ok ? parseCsv(result.csv) : null;
    return {
      user,
      ok: result.ok,
      seconds: Number(result.seconds.toFixed(4)),
      ended_s: Number(ended.toFixed(4)),
      engine: result.status?.Engine ?? null,
      queue_wait_s: result.status?.Timings ? result.status.Timings.QueueWaitMs / 1000 : null,
      execute_s: result.status?.Timings ? result.status.Timings.ExecuteMs / 1000 : null,
      same_rows_as_first: rows && firstRows ? compareRows(rows, firstRows, query.order) === null : null,
      message: result.ok ? null : result.message,
    };
  });
  const ok = queries.filter((q) => q.ok).length;
  log(`concurrency: ${ok} of ${count} succeeded in ${wall.toFixed(1)} s`);
  return { file: file.label, query: query.id, users: count, wall_s: wall, queries };
}

/**
 * Q1 on `file` once with Reuse false (it runs), then REUSE_REPEATS times with reuse on, each end to end as a
 * client sees it (submit with Prefer: wait, status, result downloaded); every repeat's rows against the first's.
 */
async function reuseCase(client: Client, file: BenchFile, query: QueryDef): Promise<ReuseRun> {
  const sql = query.sql.replaceAll("{t}", `${ACCOUNT}.${DATASET}.${DATA_NAME[file.label]}`);
  const first = await client.query(sql, { timeoutMs: QUERY_TIMEOUT_MS });
  const firstRows = first.ok ? parseCsv(first.csv) : null;
  const repeats: ReuseRun["repeats"] = [];
  for (let i = 0; i < REUSE_REPEATS; i++) {
    const repeat = await client.query(sql, { reuse: true, timeoutMs: QUERY_TIMEOUT_MS });
    const rows = repeat.ok ? parseCsv(repeat.csv) : null;
    repeats.push({
      ok: repeat.ok,
      seconds: repeat.seconds,
      submit_seconds: repeat.ok ? repeat.submitSeconds : null,
      reused: repeat.status?.Reused ?? null,
      same_rows: rows && firstRows ? compareRows(rows, firstRows, query.order) === null : null,
      message: repeat.ok ? null : repeat.message,
    });
  }
  return {
    file: file.label,
    query: query.id,
    first: {
      ok: first.ok,
      seconds: first.seconds,
      engine: first.status?.Engine ?? null,
      message: first.ok ? null : first.message,
    },
    repeats,
  };
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
  floorRun: Timed | null,
  firstQuery: QueryDef | null,
): Promise<
  Omit<UploadRun, "run"> & {
    firstAnswer: (Omit<FirstAnswerRun, "run" | "matchesSqlite3" | "mismatch"> & { rows: string[][] | null }) | null;
  }
> {
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
  const floor = floorRun
    ? { floorSeconds: floorRun.seconds, floorOk: floorRun.ok, floorMessage: floorRun.ok ? null : floorRun.message }
    : { floorSeconds: null, floorOk: null, floorMessage: null };
  const started = performance.now();
  try {
    const outer = await measureRss(pids.worker, async () => {
      const inner = await measureRss(pids.proxy, work);
      proxyRss = inner.rss;
      return inner.value;
    });
    workerRss = pids.worker.length && !outer.rss.lost ? outer.rss : null;
    const response = outer.value;
    const ok = response.status === 200;
    // The first answer: Q1 submitted as soon as the upload answered, whatever the service still prepares
    // (it runs on the CSV, or waits for the table store being built); timed from the upload's start.
    let firstAnswer:
      (Omit<FirstAnswerRun, "run" | "matchesSqlite3" | "mismatch"> & { rows: string[][] | null }) | null = null;
    if (ok && firstQuery) {
      const sql = firstQuery.sql.replaceAll("{t}", `${ACCOUNT}.${DATASET}.${DATA_NAME[file.label]}`);
      const answer = await client.query(sql, { timeoutMs: QUERY_TIMEOUT_MS });
      const seconds = (performance.now() - started) / 1000;
      firstAnswer = answer.ok
        ? {
            file: file.label,
            ok: true,
            seconds,
            uploadSeconds: response.seconds,
            querySeconds: answer.seconds,
            engine: answer.status.Engine ?? null,
            timings: answer.status.Timings,
            message: null,
            rows: parseCsv(answer.csv),
          }
        : {
            file: file.label,
            ok: false,
            seconds,
            uploadSeconds: response.seconds,
            querySeconds: answer.seconds,
            engine: answer.status?.Engine ?? null,
            timings: answer.status?.Timings ?? null,
            message: answer.message,
            rows: null,
          };
    }
    // Untimed: the query-ready form (column images or table store) is built in the background; the next upload
    // or query waits for it.
    const ready = ok ? await client.waitQueryReady(ACCOUNT, DATASET, DATA_NAME[file.label], READY_TIMEOUT_MS) : null;
    return {
      ...floor,
      firstAnswer,
      tableStore: ready?.tableStore ?? null,
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
      ...floor,
      firstAnswer: null,
      tableStore: null,
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
  lookupPath: string,
  uploaded: boolean,
  reference: boolean,
  refs: RepeatReferences | null,
  workerPids: number[],
  inspector: Measurer | null,
  isolateWorker: string | null,
  mode: MemoryMode | null,
): Promise<Omit<CaseRun, "run"> & { referenceRows: string[][] | null }> {
  const dqsSql = query.sql
    .replaceAll("{t}", `${ACCOUNT}.${DATASET}.${DATA_NAME[file.label]}`)
    .replaceAll("{lookup}", `${ACCOUNT}.${DATASET}.${LOOKUP}`);
  const localSql = query.sql.replaceAll("{t}", "t").replaceAll("{lookup}", "lookup");
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
        const run = () => client.query(dqsSql, { timeoutMs: QUERY_TIMEOUT_MS });
        if (!inspector || !mode) return run();
        if (mode === "held") {
          const held = await inspector.measureHeld(run);
          isolateHeldDelta = held.heap?.delta ?? null;
          isolateHeldPeakTotal = held.heap ? held.heap.peak.used + held.heap.peak.backing : null;
          isolateHeldSamples = held.heap?.samples ?? null;
          return held.value;
        }
        const inner = await inspector.measure(run);
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
  const sqlite3 = reference ? await runSqlite3(file.path, file.gzip, localSql, lookupPath) : null;
  const duckdb = reference ? await runDuckdb(file.path, localSql, lookupPath) : null;
  // Repeat: the query alone, on the data each reference already holds.
  const sqlite3Query: EngineRun | null = refs
    ? refs.sqliteDb
      ? await querySqlite3File(refs.sqliteDb, localSql)
      : { ok: false, seconds: 0, message: refs.sqliteError ?? "no database file" }
    : null;
  const duckdbQuery: EngineRun | null = refs
    ? refs.duckdb
      ? await refs.duckdb.query(localSql)
      : { ok: false, seconds: 0, message: refs.duckdbError ?? "not loaded" }
    : null;
  const mismatches: string[] = [];
  const check = (name: string, other: EngineRun | null, base: string[][] | null, baseName: string) => {
    if (!other?.ok || !base) return;
    const difference = compareRows(base, other.rows, query.order);
    if (difference) mismatches.push(`${baseName} vs ${name}: ${difference}`);
  };
  check("sqlite3", sqlite3, dqsRows, "dqs");
  check("duckdb", duckdb, dqsRows, "dqs");
  check("sqlite3 (file)", sqlite3Query, dqsRows, "dqs");
  check("duckdb (loaded)", duckdbQuery, dqsRows, "dqs");
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
    sqlite3Query: sqlite3Query && (sqlite3Query.ok ? { ok: true, seconds: sqlite3Query.seconds } : sqlite3Query),
    duckdbQuery: duckdbQuery && (duckdbQuery.ok ? { ok: true, seconds: duckdbQuery.seconds } : duckdbQuery),
    engine: dqs.status?.Engine ?? null,
    isolateWorker: mode ? isolateWorker : null,
    matchesSqlite3:
      dqsRows && (sqlite3?.ok || sqlite3Query?.ok) ? !mismatches.some((m) => m.startsWith("dqs vs sqlite3")) : null,
    matchesDuckdb:
      dqsRows && (duckdb?.ok || duckdbQuery?.ok) ? !mismatches.some((m) => m.startsWith("dqs vs duckdb")) : null,
    mismatches,
    referenceRows: sqlite3?.ok ? sqlite3.rows : sqlite3Query?.ok ? sqlite3Query.rows : duckdb?.ok ? duckdb.rows : null,
  };
}

const START = "<!-- bench:latest:start -->";
const END = "<!-- bench:latest:end -->";

/** Writes the tables between the bench:latest markers of bench/README.md. */
function updateReadme(markdown: string): void {
  // The table's own title becomes a sub-heading of the README's section.
  const body = markdown.replace(/^# (.*)\n+/, "**$1.** ").replace(/^## /gm, "#### ");
  for (const path of [join(BENCH, "README.md")]) {
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
