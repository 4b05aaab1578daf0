/** Medians and spreads over the runs, the targets of issues 6 and 12, and the Markdown tables. */
import type { QueryStatus, TableStoreInfo } from "./dqs.ts";
import type { BenchFile } from "./generate.ts";
import type { HeapReport, HeldReport } from "./inspector.ts";
import type { RssReport } from "./server.ts";

/** The memory pass's two measures of the isolate: after forced full GCs (live memory), or as read (garbage included). */
export type MemoryMode = "held" | "garbage";

/** What the upload table and the "flat" target call the held measure. */
const HELD_SOURCE = "isolate held: V8 heap used + ArrayBuffers after forced full GCs (DevTools)";

export type Timed = { ok: true; seconds: number } | { ok: false; seconds: number; message: string };

export interface CaseRun {
  run: number;
  file: BenchFile["label"];
  query: string;
  dqs:
    | { ok: true; seconds: number; status: QueryStatus }
    | { ok: false; seconds: number; message: string; status?: QueryStatus };
  resultRows: number | null;
  /** Peak summed RSS of the three workerd processes running the Workers (API, engine, stores) during the query, minus before, bytes. */
  workerRssDelta: number | null;
  /** Peak (V8 heap used + ArrayBuffers) of the engine Worker's isolate during the query, minus before, bytes. */
  isolateHeapDelta: number | null;
  /** The isolate's peak V8 heap used + ArrayBuffers during the query, bytes. */
  isolatePeakTotal: number | null;
  /** As isolateHeapDelta, but each reading after forced full GCs: what the query holds, bytes. */
  isolateHeldDelta: number | null;
  /** The isolate's peak (after forced GCs) V8 heap used + ArrayBuffers during the query, bytes. */
  isolateHeldPeakTotal: number | null;
  /** Readings after GC taken while the query ran. */
  isolateHeldSamples: number | null;
  /** The memory pass's measure of this run (null: a timed run). */
  mode: MemoryMode | null;
  /** Odd answers met on the way (e.g. a 503 while the isolate restarted). */
  notes: string[];
  sqlite3: Timed | null;
  duckdb: Timed | null;
  /** Repeat: the sqlite3 tool querying the database file it imported before (the statement's own time). */
  sqlite3Query: Timed | null;
  /** Repeat: DuckDB querying the table it loaded before (the query alone). */
  duckdbQuery: Timed | null;
  /** Which engine ran the dqs query (the status's `Engine`: "sqljs" or "store"). */
  engine: string | null;
  /** Memory pass: the Worker whose isolate was read (a store query runs in the table store Worker's, `dqs-store`). */
  isolateWorker: string | null;
  matchesSqlite3: boolean | null;
  matchesDuckdb: boolean | null;
  mismatches: string[];
}

export interface UploadRun {
  run: number;
  file: BenchFile["label"];
  ok: boolean;
  message: string;
  seconds: number;
  workerRss: RssReport | null;
  proxyRss: RssReport | null;
  /** Memory pass, "garbage" measure: readings as they come. */
  isolateHeap: HeapReport | null;
  /** Memory pass, "held" measure: readings after forced full GCs. */
  isolateHeld: HeldReport | null;
  /** The memory pass's measure of this run (null: a timed run). */
  mode: MemoryMode | null;
  /** Seconds from the upload's answer until its column images were built (null: not within the wait, or failed). */
  readySeconds: number | null;
  /** Bytes of each column's image once built. */
  imageBytes: number[] | null;
  /** The storage endpoint's TableStore once ready (or failed), null for a version without one. */
  tableStore: TableStoreInfo | null;
  /** The upload floor's seconds for the same bytes, right before (timed runs; null without a floor). */
  floorSeconds: number | null;
  floorOk: boolean | null;
  floorMessage: string | null;
}

/** An upload through the built command line (`dqs upload`, a process of its own), in a timed run. */
export interface CliUploadRun {
  run: number;
  file: BenchFile["label"];
  ok: boolean;
  message: string;
  /** From the process's start to its exit (Node's start included). */
  seconds: number;
  /** Seconds from the exit until the data item was query-ready (null: not within the wait, or failed). */
  readySeconds: number | null;
}

/** First answer: from the upload's start to Q1's result downloaded, Q1 submitted as soon as the upload answered. */
export interface FirstAnswerRun {
  run: number;
  file: BenchFile["label"];
  ok: boolean;
  seconds: number;
  uploadSeconds: number;
  querySeconds: number;
  engine: string | null;
  timings: QueryStatus["Timings"] | null;
  message: string | null;
  /** Its rows against the sqlite3 reference's for Q1 in the same run (null: not compared). */
  matchesSqlite3: boolean | null;
  mismatch: string | null;
}

/** N users' Q1 on the 5m file at once. */
export interface ConcurrencyRun {
  file: string;
  query: string;
  users: number;
  wall_s: number;
  queries: {
    user: number;
    ok: boolean;
    seconds: number;
    ended_s: number;
    engine: string | null;
    queue_wait_s: number | null;
    execute_s: number | null;
    same_rows_as_first: boolean | null;
    message: string | null;
  }[];
}

/** Q1 on one file run once, then repeated: each repeat may answer from the first run's result (issue 13). */
export interface ReuseRun {
  file: string;
  query: string;
  /** The run the repeats reuse: submitted with Reuse false. */
  first: { ok: boolean; seconds: number; engine: string | null; message: string | null };
  repeats: {
    ok: boolean;
    seconds: number;
    /** Until the submit's answer, which already says the query succeeded when it reused a result. */
    submit_seconds: number | null;
    reused: boolean | null;
    same_rows: boolean | null;
    message: string | null;
  }[];
}

/**
 * Which isolate the memory pass read for uploads (the API Worker), sql.js queries (the engine Worker) or
 * table-store queries (the table store Worker), and how it knew.
 */
export interface IsolateNote {
  role: "uploads" | "queries" | "long queries" | "store queries";
  /** The Worker's name in its config (`dqs`, `dqs-engine`, `dqs-store`). */
  worker: string | null;
  /** How the session was reached: the inspector proxy of the Worker's own `wrangler dev` process. */
  via: string | null;
  /** The session's DevTools WebSocket URL. */
  target: string | null;
  /** The Worker's bundle found among the isolate's scripts (the check that it is the right isolate). */
  script: string | null;
  /** V8's id of the isolate (`Runtime.getIsolateId`). */
  isolate_id: string | null;
  /** Whether the session was used: open and on the right isolate. */
  ok: boolean;
}

interface SummaryInput {
  date: string;
  machine: Record<string, string | number>;
  runs: number;
  vars: Record<string, string>;
  memoryBudgetBytes: number | null;
  files: BenchFile[];
  queries: { id: string; sql: string }[];
  uploads: UploadRun[];
  /** The same files uploaded through the command line (empty without them). */
  cliUploads: CliUploadRun[];
  cases: CaseRun[];
  firstAnswers: FirstAnswerRun[];
  concurrency: ConcurrencyRun | null;
  reuse: ReuseRun[];
  /** The untimed pass with DevTools attached, for the isolate's memory. */
  memory: { uploads: UploadRun[]; cases: CaseRun[] };
  /** The memory pass's sessions (empty without one). */
  isolates: IsolateNote[];
  note: string | null;
}

export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
const min = (values: number[]) => (values.length ? Math.min(...values) : null);
const max = (values: number[]) => (values.length ? Math.max(...values) : null);
const ratio = (a: number | null, b: number | null) => (a !== null && b !== null && b > 0 ? a / b : null);
const round = (x: number | null, digits = 4) => (x === null ? null : Number(x.toFixed(digits)));

function spread(values: number[]) {
  return { median: round(median(values)), min: round(min(values)), max: round(max(values)) };
}

function summarizeCase(runs: CaseRun[], file: BenchFile, sql: string, memoryRuns: CaseRun[]) {
  const ok = runs.flatMap((r) => (r.dqs.ok ? [r.dqs] : []));
  const failed = runs.flatMap((r) => (r.dqs.ok ? [] : [r.dqs]));
  const timing = (key: "QueueWaitMs" | "LoadMs" | "ExecuteMs" | "WriteMs") =>
    round(median(ok.flatMap((r) => (r.status.Timings ? [r.status.Timings[key] / 1000] : []))));
  const dqs = spread(ok.map((r) => r.seconds));
  // A failed query still reports how much it held when it stopped.
  const withPeak = (ok.length ? ok : failed).flatMap((r) =>
    r.status?.PeakMemoryBytes != null ? [r.status.PeakMemoryBytes] : [],
  );
  const peak = median(withPeak);
  const bytesLoaded = median(
    (ok.length ? ok : failed).flatMap((r) => (r.status?.BytesLoaded != null ? [r.status.BytesLoaded] : [])),
  );
  const engine = (pick: (r: CaseRun) => Timed | null) => {
    const timed = runs.flatMap((r) => {
      const t = pick(r);
      return t ? [t] : [];
    });
    const good = timed.flatMap((t) => (t.ok ? [t.seconds] : []));
    const errors = timed.flatMap((t) => (t.ok ? [] : [t.message]));
    return { ...spread(good), failures: errors.length, error: errors[0] ?? null, ran: timed.length > 0 };
  };
  const sqlite3 = engine((r) => r.sqlite3);
  const duckdb = engine((r) => r.duckdb);
  const sqlite3Query = engine((r) => r.sqlite3Query);
  const duckdbQuery = engine((r) => r.duckdbQuery);
  const engines = [...new Set(runs.flatMap((r) => (r.engine ? [r.engine] : [])))];
  const other = ok.flatMap((r) => {
    const t = r.status.Timings;
    return t ? [r.seconds - (t.QueueWaitMs + t.LoadMs + t.ExecuteMs + t.WriteMs) / 1000] : [];
  });
  const matches = (pick: (r: CaseRun) => boolean | null) => {
    const seen = runs.map(pick).filter((m): m is boolean => m !== null);
    return seen.length === 0 ? null : seen.every(Boolean);
  };
  return {
    file: file.label,
    query: runs[0]!.query,
    sql,
    dqs_s: dqs.median,
    dqs_min_s: dqs.min,
    dqs_max_s: dqs.max,
    dqs_failures: failed.length,
    dqs_error: failed[0]?.message ?? null,
    sqlite3_s: sqlite3.median,
    sqlite3_min_s: sqlite3.min,
    sqlite3_max_s: sqlite3.max,
    sqlite3_error: sqlite3.error,
    duckdb_s: duckdb.median,
    duckdb_min_s: duckdb.min,
    duckdb_max_s: duckdb.max,
    duckdb_error: duckdb.error,
    dqs_over_sqlite3: round(ratio(dqs.median, sqlite3.median), 3),
    dqs_over_duckdb: round(ratio(dqs.median, duckdb.median), 3),
    /** Which engine ran the query in dqs ("sqljs" or "store"; both, comma-separated, if the runs differed). */
    engine: engines.length ? engines.join(", ") : null,
    /** Repeat: the sqlite3 tool on the database file it imported before, the statement's own time (`.timer`). */
    sqlite3_query_s: sqlite3Query.median,
    sqlite3_query_min_s: sqlite3Query.min,
    sqlite3_query_max_s: sqlite3Query.max,
    sqlite3_query_error: sqlite3Query.error,
    /** Repeat: DuckDB on the table it loaded before, the query alone. */
    duckdb_query_s: duckdbQuery.median,
    duckdb_query_min_s: duckdbQuery.min,
    duckdb_query_max_s: duckdbQuery.max,
    duckdb_query_error: duckdbQuery.error,
    dqs_over_sqlite3_query: round(ratio(dqs.median, sqlite3Query.median), 3),
    dqs_over_duckdb_query: round(ratio(dqs.median, duckdbQuery.median), 3),
    held_bytes_per_csv_byte: round(ratio(peak, file.csvBytes), 3),
    peak_memory_bytes: peak,
    peak_memory_max_bytes: max(withPeak),
    bytes_loaded: bytesLoaded,
    csv_bytes: file.csvBytes,
    queue_wait_s: timing("QueueWaitMs"),
    load_s: timing("LoadMs"),
    execute_s: timing("ExecuteMs"),
    write_s: timing("WriteMs"),
    /** End to end minus the four recorded timings: submit, queueing before the record's clock, status polling, download. */
    other_s: round(median(other)),
    result_rows: runs.find((r) => r.resultRows !== null)?.resultRows ?? null,
    matches_sqlite3: matches((r) => r.matchesSqlite3),
    matches_duckdb: matches((r) => r.matchesDuckdb),
    mismatch: runs.flatMap((r) => r.mismatches)[0] ?? null,
    workerd_rss_delta_bytes: median(runs.flatMap((r) => (r.workerRssDelta !== null ? [r.workerRssDelta] : []))),
    /** From the memory pass: the isolate's peak V8 heap used + ArrayBuffers after forced full GCs, minus the same before (WebAssembly memory not included). */
    isolate_held_delta_bytes: median(
      memoryRuns.flatMap((r) => (r.isolateHeldDelta !== null ? [r.isolateHeldDelta] : [])),
    ),
    /** From the memory pass: that peak itself (V8 heap used + ArrayBuffers after forced GCs). */
    isolate_held_peak_total_bytes: median(
      memoryRuns.flatMap((r) => (r.isolateHeldPeakTotal !== null ? [r.isolateHeldPeakTotal] : [])),
    ),
    /** From the memory pass: readings after GC taken while the query ran. */
    isolate_held_samples: memoryRuns.flatMap((r) => (r.isolateHeldSamples !== null ? [r.isolateHeldSamples] : [])),
    /** From the memory pass (a run without forced GCs): the isolate's peak V8 heap used + ArrayBuffers during the query, minus before, garbage not yet collected included. */
    isolate_delta_incl_garbage_bytes: median(
      memoryRuns.flatMap((r) => (r.isolateHeapDelta !== null ? [r.isolateHeapDelta] : [])),
    ),
    /** The same run's absolute peak (V8 heap used + ArrayBuffers, garbage included). */
    isolate_peak_total_incl_garbage_bytes: median(
      memoryRuns.flatMap((r) => (r.isolatePeakTotal !== null ? [r.isolatePeakTotal] : [])),
    ),
    /** The memory pass read the isolate of this Worker (where the query runs). */
    isolate_worker: memoryRuns.find((r) => r.isolateWorker)?.isolateWorker ?? null,
    notes: runs.flatMap((r) => r.notes),
    per_run: runs.map((r) => ({
      run: r.run,
      dqs_s: round(r.dqs.seconds),
      dqs_ok: r.dqs.ok,
      message: r.dqs.ok ? undefined : r.dqs.message,
      timings_ms: r.dqs.status?.Timings ?? null,
      peak_memory_bytes: r.dqs.status?.PeakMemoryBytes ?? null,
      bytes_loaded: r.dqs.status?.BytesLoaded ?? null,
      workerd_rss_delta_bytes: r.workerRssDelta,
      sqlite3_s: r.sqlite3 ? round(r.sqlite3.seconds) : null,
      duckdb_s: r.duckdb ? round(r.duckdb.seconds) : null,
      sqlite3_query_s: r.sqlite3Query ? round(r.sqlite3Query.seconds) : null,
      duckdb_query_s: r.duckdbQuery ? round(r.duckdbQuery.seconds) : null,
      engine: r.engine,
      mismatches: r.mismatches,
    })),
  };
}

function summarizeUpload(runs: UploadRun[], file: BenchFile, memoryRuns: UploadRun[]) {
  const ok = runs.filter((r) => r.ok && r.seconds > 0);
  const rate = spread(ok.map((r) => file.bytes / 1e6 / r.seconds));
  const floorRuns = runs.filter((r) => r.floorOk && r.floorSeconds);
  const floorRate = spread(floorRuns.map((r) => file.bytes / 1e6 / r.floorSeconds!));
  const store = [...ok].reverse().find((r) => r.tableStore)?.tableStore ?? null;
  const worker = ok.flatMap((r) => (r.workerRss ? [r.workerRss.delta] : []));
  const proxy = ok.flatMap((r) => (r.proxyRss ? [r.proxyRss.delta] : []));
  const held = memoryRuns.flatMap((r) => (r.ok && r.isolateHeld ? [r.isolateHeld] : []));
  const isolate = memoryRuns.flatMap((r) => (r.ok && r.isolateHeap ? [r.isolateHeap] : []));
  // The primary figure: what the upload holds (after forced GCs), else the isolate with garbage, else the process RSS.
  const [primary, source] = held.length
    ? [held.map((h) => h.delta), HELD_SOURCE]
    : isolate.length
      ? [isolate.map((h) => h.delta), "isolate heap + ArrayBuffers, garbage included (DevTools)"]
      : [worker, worker.length ? "workerd RSS" : null];
  return {
    file: file.label,
    gzip: file.gzip,
    bytes: file.bytes,
    csv_bytes: file.csvBytes,
    seconds: round(median(ok.map((r) => r.seconds))),
    mb_per_s: round(rate.median, 2),
    mb_per_s_min: round(rate.min, 2),
    mb_per_s_max: round(rate.max, 2),
    csv_mb_per_s: round(median(ok.map((r) => file.csvBytes / 1e6 / r.seconds)), 2),
    /** The upload floor: the same multipart bytes streamed by a bare Worker into local R2 (bench/floor), MB/s. */
    floor_mb_per_s: round(floorRate.median, 2),
    floor_mb_per_s_min: round(floorRate.min, 2),
    floor_mb_per_s_max: round(floorRate.max, 2),
    floor_error: runs.find((r) => r.floorOk === false)?.floorMessage ?? null,
    /** mb_per_s over floor_mb_per_s (medians). */
    fraction_of_floor: round(ratio(rate.median, floorRate.median), 3),
    /** The data item's table store as the storage endpoint reported it once ready (null: column images). */
    table_store: store,
    /** Seconds from the upload's answer until the column images were built in the background (queries read the CSV until then). */
    query_ready_s: round(median(ok.flatMap((r) => (r.readySeconds === null ? [] : [r.readySeconds])))),
    query_ready_failures: ok.filter((r) => r.readySeconds === null).length,
    column_image_bytes: ok.find((r) => r.imageBytes)?.imageBytes ?? null,
    /**
     * What the upload holds at its peak, above what the isolate held before
     * (median of the memory pass's uploads): the isolate's V8 heap used +
     * ArrayBuffers read after forced full GCs (see `peak_memory_source`).
     */
    peak_memory_bytes: median(primary),
    peak_memory_max_bytes: max(primary),
    peak_memory_source: source,
    /** Memory pass, held: peak (after forced GCs) of V8 heap used + ArrayBuffers minus the same before, per upload's median. */
    isolate_held_bytes: median(held.map((h) => h.delta)),
    /** That peak itself, in all. */
    isolate_held_peak_total_bytes: median(held.map((h) => h.peak.used + h.peak.backing)),
    /** Readings after GC that counted, per held upload (few for a short upload: each takes tens of ms). */
    isolate_held_samples: held.map((h) => h.samples),
    /** Memory pass, a run without forced GCs: peak of V8 heap used + ArrayBuffers minus before, garbage not yet collected included. */
    isolate_delta_incl_garbage_bytes: median(isolate.map((h) => h.delta)),
    /** The same run's absolute peak (garbage included). */
    isolate_peak_total_incl_garbage_bytes: median(isolate.map((h) => h.peak.used + h.peak.backing)),
    /** The three workerd processes that run the Workers, API, engine and stores (and the local D1/R2/queue emulation): peak summed RSS (VmHWM after a reset) minus before. */
    workerd_rss_peak_bytes: median(worker),
    /** The first run's figure: later runs find the memory the process already grew to, and barely move its RSS. */
    workerd_rss_first_run_bytes: runs.find((r) => r.ok && r.workerRss)?.workerRss?.delta ?? null,
    workerd_rss_peak_max_bytes: max(worker),
    /** The same for wrangler's proxy workerd process, which the request passes through. */
    proxy_peak_memory_bytes: median(proxy),
    worker_rss_baseline_bytes: median(ok.flatMap((r) => (r.workerRss ? [r.workerRss.baseline] : []))),
    failures: runs.length - ok.length,
    error: runs.find((r) => !r.ok)?.message ?? null,
    message: ok[0]?.message ?? null,
    per_run: runs.map((r) => ({
      run: r.run,
      ok: r.ok,
      seconds: round(r.seconds),
      floor_seconds: r.floorSeconds === null ? null : round(r.floorSeconds),
      query_ready_s: r.readySeconds === null ? null : round(r.readySeconds),
      table_store: r.tableStore,
      worker_rss: r.workerRss,
      proxy_rss: r.proxyRss,
      message: r.message,
    })),
  };
}

function summarizeCliUpload(runs: CliUploadRun[], file: BenchFile) {
  const ok = runs.filter((r) => r.ok && r.seconds > 0);
  const rate = spread(ok.map((r) => file.bytes / 1e6 / r.seconds));
  return {
    file: file.label,
    gzip: file.gzip,
    bytes: file.bytes,
    /** From `dqs upload`'s start to its exit. */
    seconds: round(median(ok.map((r) => r.seconds))),
    mb_per_s: round(rate.median, 2),
    mb_per_s_min: round(rate.min, 2),
    mb_per_s_max: round(rate.max, 2),
    csv_mb_per_s: round(median(ok.map((r) => file.csvBytes / 1e6 / r.seconds)), 2),
    query_ready_s: round(median(ok.flatMap((r) => (r.readySeconds === null ? [] : [r.readySeconds])))),
    query_ready_failures: ok.filter((r) => r.readySeconds === null).length,
    failures: runs.length - ok.length,
    error: runs.find((r) => !r.ok)?.message ?? null,
    per_run: runs.map((r) => ({
      run: r.run,
      ok: r.ok,
      seconds: round(r.seconds),
      query_ready_s: r.readySeconds === null ? null : round(r.readySeconds),
      message: r.message,
    })),
  };
}

export type Summary = ReturnType<typeof summarize>;

export function summarize(input: SummaryInput) {
  const byFile = new Map(input.files.map((f) => [f.label, f]));
  const cases = input.files.flatMap((file) =>
    input.queries.flatMap((query) => {
      const runs = input.cases.filter((c) => c.file === file.label && c.query === query.id);
      const memoryRuns = input.memory.cases.filter((c) => c.file === file.label && c.query === query.id);
      return runs.length ? [summarizeCase(runs, file, query.sql, memoryRuns)] : [];
    }),
  );
  const upload = input.files.flatMap((file) => {
    const runs = input.uploads.filter((u) => u.file === file.label);
    const memoryRuns = input.memory.uploads.filter((u) => u.file === file.label);
    return runs.length ? [summarizeUpload(runs, byFile.get(file.label)!, memoryRuns)] : [];
  });
  const upload_cli = input.files.flatMap((file) => {
    const runs = input.cliUploads.filter((u) => u.file === file.label);
    return runs.length ? [summarizeCliUpload(runs, file)] : [];
  });
  const first_answer = input.files.flatMap((file) => {
    const runs = input.firstAnswers.filter((a) => a.file === file.label);
    const q1 = cases.find((c) => c.file === file.label && c.query === "Q1");
    return runs.length ? [summarizeFirstAnswer(runs, file, q1)] : [];
  });
  const concurrency = input.concurrency ? summarizeConcurrency(input.concurrency) : null;
  const reuse = input.reuse.map(summarizeReuse);
  return {
    date: input.date,
    machine: input.machine,
    runs: input.runs,
    vars: input.vars,
    memory_budget_bytes: input.memoryBudgetBytes,
    note: input.note,
    files: input.files.map((f) => ({
      file: f.label,
      path: f.path.replace(/^.*\/bench\//, "bench/"),
      rows: f.rows,
      gzip: f.gzip,
      bytes: f.bytes,
      csv_bytes: f.csvBytes,
    })),
    cases,
    upload,
    upload_cli,
    first_answer,
    concurrency,
    reuse,
    targets: targets(cases, upload, input.memoryBudgetBytes, first_answer, concurrency),
    memory_pass: {
      isolates: input.isolates,
      uploads: input.memory.uploads.map((u) => ({
        file: u.file,
        ok: u.ok,
        seconds: round(u.seconds),
        mode: u.mode,
        isolate_held: u.isolateHeld,
        isolate_heap_incl_garbage: u.isolateHeap,
        workerd_rss: u.workerRss,
      })),
      cases: input.memory.cases.map((c) => ({
        file: c.file,
        query: c.query,
        ok: c.dqs.ok,
        message: c.dqs.ok ? undefined : c.dqs.message,
        mode: c.mode,
        engine: c.engine,
        isolate_worker: c.isolateWorker,
        peak_memory_bytes: c.dqs.status?.PeakMemoryBytes ?? null,
        isolate_held_delta_bytes: c.isolateHeldDelta,
        isolate_held_peak_total_bytes: c.isolateHeldPeakTotal,
        isolate_held_samples: c.isolateHeldSamples,
        isolate_delta_incl_garbage_bytes: c.isolateHeapDelta,
        isolate_peak_total_incl_garbage_bytes: c.isolatePeakTotal,
        workerd_rss_delta_bytes: c.workerRssDelta,
      })),
    },
  };
}

function summarizeFirstAnswer(runs: FirstAnswerRun[], file: BenchFile, q1: CaseSummary | undefined) {
  const ok = runs.filter((a) => a.ok);
  const dqs = spread(ok.map((a) => a.seconds));
  const seen = runs.map((a) => a.matchesSqlite3).filter((m): m is boolean => m !== null);
  return {
    file: file.label,
    /** Upload start → Q1's result downloaded (Q1 submitted as soon as the upload answered). */
    dqs_s: dqs.median,
    dqs_min_s: dqs.min,
    dqs_max_s: dqs.max,
    upload_s: round(median(ok.map((a) => a.uploadSeconds))),
    query_s: round(median(ok.map((a) => a.querySeconds))),
    engine: [...new Set(ok.flatMap((a) => (a.engine ? [a.engine] : [])))].join(", ") || null,
    /** sqlite3 import + Q1 in one process (the Q1 case's sqlite3_s). */
    sqlite3_s: q1?.sqlite3_s ?? null,
    /** DuckDB read_csv + Q1 (the Q1 case's duckdb_s). */
    duckdb_s: q1?.duckdb_s ?? null,
    dqs_over_sqlite3: round(ratio(dqs.median, q1?.sqlite3_s ?? null), 3),
    dqs_over_duckdb: round(ratio(dqs.median, q1?.duckdb_s ?? null), 3),
    matches_sqlite3: seen.length ? seen.every(Boolean) : null,
    mismatch: runs.find((a) => a.mismatch)?.mismatch ?? null,
    failures: runs.length - ok.length,
    error: runs.find((a) => !a.ok)?.message ?? null,
    per_run: runs.map((a) => ({
      run: a.run,
      ok: a.ok,
      seconds: round(a.seconds),
      upload_s: round(a.uploadSeconds),
      query_s: round(a.querySeconds),
      engine: a.engine,
      timings_ms: a.timings,
      message: a.message,
    })),
  };
}

type CaseSummary = ReturnType<typeof summarizeCase>;
type UploadSummary = ReturnType<typeof summarizeUpload>;
type FirstAnswerSummary = ReturnType<typeof summarizeFirstAnswer>;
type ConcurrencySummary = ReturnType<typeof summarizeConcurrency>;

function summarizeConcurrency(run: ConcurrencyRun) {
  const ok = run.queries.filter((q) => q.ok);
  const latency = ok.map((q) => q.seconds);
  return {
    file: run.file,
    query: run.query,
    users: run.users,
    succeeded: ok.length,
    failed: run.queries.length - ok.length,
    /** From the first submit to the last result downloaded. */
    wall_s: round(run.wall_s),
    /** Succeeded queries over wall_s. */
    throughput_qps: round(ratio(ok.length, run.wall_s), 3),
    latency_median_s: round(median(latency)),
    latency_max_s: round(max(latency)),
    latency_min_s: round(min(latency)),
    queue_wait_median_s: round(median(ok.flatMap((q) => (q.queue_wait_s === null ? [] : [q.queue_wait_s])))),
    queue_wait_max_s: round(max(ok.flatMap((q) => (q.queue_wait_s === null ? [] : [q.queue_wait_s])))),
    execute_median_s: round(median(ok.flatMap((q) => (q.execute_s === null ? [] : [q.execute_s])))),
    engine: [...new Set(ok.flatMap((q) => (q.engine ? [q.engine] : [])))].join(", ") || null,
    same_rows: ok.every((q) => q.same_rows_as_first !== false),
    error: run.queries.find((q) => !q.ok)?.message ?? null,
    queries: run.queries,
  };
}

function summarizeReuse(run: ReuseRun) {
  const ok = run.repeats.filter((r) => r.ok);
  const seconds = ok.map((r) => r.seconds);
  const repeatMedian = median(seconds);
  return {
    file: run.file,
    query: run.query,
    first_s: run.first.ok ? round(run.first.seconds) : null,
    first_engine: run.first.engine,
    repeats: run.repeats.length,
    /** Each repeat end to end: submit → status → result downloaded. */
    repeat_median_s: round(repeatMedian),
    repeat_min_s: round(min(seconds)),
    repeat_max_s: round(max(seconds)),
    submit_median_s: round(median(ok.flatMap((r) => (r.submit_seconds === null ? [] : [r.submit_seconds])))),
    /** How many repeats the service answered from the first run's result. */
    reused: run.repeats.filter((r) => r.reused === true).length,
    same_rows: run.repeats.every((r) => r.same_rows !== false),
    first_over_repeat: round(run.first.ok ? ratio(run.first.seconds, repeatMedian) : null, 1),
    error: (run.first.ok ? null : run.first.message) ?? run.repeats.find((r) => !r.ok)?.message ?? null,
    per_repeat: run.repeats,
  };
}

/** The targets of issue 6, each with its figure; `met` is null when the figure is missing. */
function targets(
  cases: CaseSummary[],
  upload: UploadSummary[],
  budget: number | null,
  firstAnswer: FirstAnswerSummary[],
  concurrency: ConcurrencySummary | null,
) {
  const find = (file: string, query: string) => cases.find((c) => c.file === file && c.query === query);
  const list: { target: string; figure: string; met: boolean | null; issue?: number }[] = [];
  const q1m = find("1m", "Q1");
  if (q1m)
    list.push({
      target: "Q1 on 1m, end to end ≤ sqlite3 import + query (ratio ≤ 1.0)",
      figure:
        q1m.dqs_over_sqlite3 === null
          ? `n/a${q1m.dqs_error ? ` (dqs: ${q1m.dqs_error})` : ""}`
          : `${q1m.dqs_over_sqlite3}`,
      met: q1m.dqs_over_sqlite3 === null ? null : q1m.dqs_over_sqlite3 <= 1,
    });
  const q100k = find("100k", "Q1");
  if (q100k)
    list.push({
      target: "Q1 on 100k, end to end < 0.5 s",
      figure: q100k.dqs_s === null ? "n/a" : `${q100k.dqs_s} s`,
      met: q100k.dqs_s === null ? null : q100k.dqs_s < 0.5,
    });
  if (q1m)
    list.push({
      target: "Q1 on 1m (3 of 6 columns) holds ≤ 0.7 bytes per CSV byte",
      figure:
        q1m.engine === "store"
          ? `n/a: ran in the table store, which reports PeakMemoryBytes ${q1m.peak_memory_bytes ?? "n/a"} (not measured there)`
          : q1m.held_bytes_per_csv_byte === null
            ? "n/a"
            : `${q1m.held_bytes_per_csv_byte}`,
      met: q1m.engine === "store" || q1m.held_bytes_per_csv_byte === null ? null : q1m.held_bytes_per_csv_byte <= 0.7,
    });
  for (const c of cases.filter((c) => c.file !== "100k")) {
    const clean = c.dqs_error === null || /limit|budget/i.test(c.dqs_error);
    const under = c.peak_memory_max_bytes === null || budget === null || c.peak_memory_max_bytes <= budget;
    list.push({
      target: `${c.query} on ${c.file} stays under the memory budget${budget ? ` (${budget} B)` : ""} or fails naming the limit`,
      figure:
        c.dqs_error !== null
          ? /^failed/i.test(c.dqs_error)
            ? c.dqs_error
            : `failed: ${c.dqs_error}`
          : c.engine === "store"
            ? `succeeded in the table store (PeakMemoryBytes ${c.peak_memory_max_bytes ?? "n/a"}: not measured there)`
            : `peak ${c.peak_memory_max_bytes ?? "n/a"} B (${c.held_bytes_per_csv_byte ?? "n/a"} per CSV byte)`,
      met: clean && (c.dqs_error !== null || under),
    });
  }
  const up1m = upload.find((u) => u.file === "1m");
  if (up1m)
    list.push({
      target: "upload of the plain 1m file ≥ 60 MB/s",
      figure: up1m.mb_per_s === null ? `n/a (${up1m.error})` : `${up1m.mb_per_s} MB/s`,
      met: up1m.mb_per_s === null ? null : up1m.mb_per_s >= 60,
    });
  const up100k = upload.find((u) => u.file === "100k");
  const FLAT = 5e6;
  for (const big of upload.filter((u) => u.file !== "100k")) {
    if (!up100k || up100k.peak_memory_bytes === null || big.peak_memory_bytes === null) continue;
    if (up100k.peak_memory_source !== big.peak_memory_source) continue;
    const growth = big.peak_memory_bytes - up100k.peak_memory_bytes;
    list.push({
      target: `upload peak memory flat: ${big.file} holds ≤ 100k + 5 MB (${big.peak_memory_source === HELD_SOURCE ? "isolate, after forced GCs" : (big.peak_memory_source ?? "?")})`,
      figure: `${mb(big.peak_memory_bytes)} vs ${mb(up100k.peak_memory_bytes)} (${growth >= 0 ? "+" : ""}${mb(growth)})`,
      met: growth <= FLAT,
    });
  }
  list.push(...targets12(cases, upload, firstAnswer, concurrency));
  return list.map((t) => ({ ...t, issue: t.issue ?? 6 }));
}

/** Issue 12's targets (the table store, the 5M-row file), each with its figure. */
function targets12(
  cases: CaseSummary[],
  upload: UploadSummary[],
  firstAnswer: FirstAnswerSummary[],
  concurrency: ConcurrencySummary | null,
) {
  const list: { target: string; figure: string; met: boolean | null; issue: number }[] = [];
  const find = (file: string, query: string) => cases.find((c) => c.file === file && c.query === query);
  for (const file of ["1m", "1m.gz", "5m", "5m.gz"]) {
    const mine = cases.filter((c) => c.file === file);
    if (!mine.length) continue;
    const runs = mine.flatMap((c) => c.per_run);
    const failed = runs.filter((r) => !r.dqs_ok);
    const budget = failed.filter((r) => /memory budget|QUERY_MEMORY_BUDGET_BYTES/i.test(r.message ?? ""));
    list.push({
      target: `every query on ${file} succeeds (${mine.map((c) => c.query).join(", ")}), no memory-budget failure`,
      figure:
        `${runs.length - failed.length} of ${runs.length} succeeded` +
        (budget.length ? `; ${budget.length} memory-budget failures` : "") +
        (failed.length ? `: ${failed[0]!.message}` : ""),
      met: failed.length === 0,
      issue: 12,
    });
  }
  for (const file of ["1m", "5m"]) {
    const c = find(file, "Q1");
    if (!c) continue;
    list.push({
      target: `repeat: Q1 on ${file} ≤ 1.5 × the sqlite3 tool's query time on its imported database file`,
      figure:
        c.dqs_over_sqlite3_query === null
          ? `n/a${c.dqs_error ? ` (dqs: ${c.dqs_error})` : c.sqlite3_query_error ? ` (sqlite3: ${c.sqlite3_query_error})` : ""}`
          : `${c.dqs_over_sqlite3_query} (${s(c.dqs_s)} s vs ${s(c.sqlite3_query_s)} s)`,
      met: c.dqs_over_sqlite3_query === null ? null : c.dqs_over_sqlite3_query <= 1.5,
      issue: 12,
    });
  }
  const first1m = firstAnswer.find((a) => a.file === "1m");
  if (first1m)
    list.push({
      target: "first answer on 1m (upload start → Q1 downloaded) ≤ 2.0 × sqlite3 import + query",
      figure:
        first1m.dqs_over_sqlite3 === null
          ? `n/a${first1m.error ? ` (dqs: ${first1m.error})` : ""}`
          : `${first1m.dqs_over_sqlite3} (${s(first1m.dqs_s)} s vs ${s(first1m.sqlite3_s)} s)`,
      met: first1m.dqs_over_sqlite3 === null ? null : first1m.dqs_over_sqlite3 <= 2,
      issue: 12,
    });
  // Held memory where the queries run (memory pass, after forced GCs): the 5M-row file's against the 1M-row file's.
  const held = (file: string) => {
    const values = cases
      .filter((c) => c.file === file)
      .flatMap((c) => (c.isolate_held_peak_total_bytes === null ? [] : [c.isolate_held_peak_total_bytes]));
    return values.length ? Math.max(...values) : null;
  };
  const workers = (file: string) => [
    ...new Set(cases.filter((c) => c.file === file).flatMap((c) => (c.isolate_worker ? [c.isolate_worker] : []))),
  ];
  const held1m = held("1m");
  const held5m = held("5m");
  if (cases.some((c) => c.file === "5m") && cases.some((c) => c.file === "1m")) {
    const growth = held1m !== null && held5m !== null ? held5m - held1m : null;
    list.push({
      target:
        "held memory during 5m queries ≤ during 1m ones + 5 MB (isolate where they run, after forced GCs, peak over the queries)",
      figure:
        growth === null
          ? "n/a (no memory pass)"
          : `${mb(held5m)} vs ${mb(held1m)} (${growth >= 0 ? "+" : ""}${mb(growth)}; read in ${workers("5m").join(", ")})`,
      met: growth === null ? null : growth <= 5e6,
      issue: 12,
    });
  }
  for (const file of ["1m", "5m"]) {
    const u = upload.find((x) => x.file === file);
    if (!u) continue;
    list.push({
      target: `upload of the plain ${file} file ≥ 85% of the floor (a bare Worker streaming the same bytes into local R2)`,
      figure:
        u.fraction_of_floor === null
          ? `n/a${u.floor_error ? ` (floor: ${u.floor_error})` : ""}`
          : `${(u.fraction_of_floor * 100).toFixed(1)}% (${u.mb_per_s} of ${u.floor_mb_per_s} MB/s)`,
      met: u.fraction_of_floor === null ? null : u.fraction_of_floor >= 0.85,
      issue: 12,
    });
  }
  if (concurrency)
    list.push({
      target: `${concurrency.users} concurrent ${concurrency.query} on ${concurrency.file} (${concurrency.users} users): every one finishes`,
      figure: `${concurrency.succeeded} of ${concurrency.users}; ${concurrency.throughput_qps} queries/s, latency median ${s(concurrency.latency_median_s)} s, max ${s(concurrency.latency_max_s)} s`,
      met: concurrency.failed === 0,
      issue: 12,
    });
  return list;
}

function mb(bytes: number | null): string {
  return bytes === null ? "n/a" : `${(bytes / 1e6).toFixed(1)} MB`;
}

function s(x: number | null): string {
  if (x === null) return "n/a";
  return x < 10 ? x.toFixed(3) : x.toFixed(2);
}

function withSpread(medianValue: number | null, lo: number | null, hi: number | null, runs: number): string {
  if (medianValue === null) return "n/a";
  return runs > 1 && lo !== null && hi !== null ? `${s(medianValue)} (${s(lo)}–${s(hi)})` : s(medianValue);
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

function matchText(c: CaseSummary): string {
  const part = (name: string, m: boolean | null) => (m === null ? `${name} n/a` : m ? `${name} ✓` : `${name} ✗`);
  return `${part("sqlite3", c.matches_sqlite3)}, ${part("duckdb", c.matches_duckdb)}`;
}

export function renderMarkdown(summary: Summary): string {
  const m = summary.machine;
  const lines: string[] = [];
  lines.push(`# dqs benchmark, ${summary.date.slice(0, 19).replace("T", " ")} UTC`);
  lines.push("");
  lines.push(
    `Machine: ${m.cpu}, ${m.cores} cores, ${(Number(m.ram_bytes) / 2 ** 30).toFixed(0)} GiB RAM, ${m.os}; ` +
      `Node ${m.node}, wrangler ${m.wrangler} (workerd ${m.workerd}), sql.js ${m.sql_js}, sqlite3 ${m.sqlite3}, DuckDB ${m.duckdb}. ` +
      `Runs: ${summary.runs}${summary.runs > 1 ? " (median, min–max)" : ""}.` +
      (Object.keys(summary.vars).length
        ? ` Vars: ${Object.entries(summary.vars)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")}.`
        : ""),
  );
  if (summary.note) lines.push("", `**Note:** ${summary.note}`);
  lines.push("");
  lines.push("## Queries");
  lines.push("");
  lines.push(
    "Seconds, end to end (dqs: submit → result downloaded, on prepared data; sqlite3 and DuckDB: import + query). " +
      "Engine: where dqs ran the query (sqljs: sql.js in the engine Worker over column images; store: the data item's " +
      "table store, a SQLite Durable Object). " +
      "Queue, load, execute, write: the query's own recorded timings; other: the rest of end to end " +
      "(submit, status polling, download, and whatever the timings do not cover).",
  );
  lines.push("");
  lines.push(
    "| file | query | engine | dqs s | queue | load | execute | write | other | sqlite3 s | DuckDB s | dqs/sqlite3 | dqs/DuckDB | rows | same rows |",
  );
  lines.push("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
  for (const c of summary.cases) {
    const dqs =
      c.dqs_s === null
        ? "**FAILED** ↓"
        : withSpread(c.dqs_s, c.dqs_min_s, c.dqs_max_s, summary.runs) +
          (c.dqs_failures ? ` (${c.dqs_failures} of ${c.per_run.length} failed ↓)` : "");
    const ref = (value: number | null, lo: number | null, hi: number | null, error: string | null) =>
      value === null ? (error ? "**FAILED** ↓" : "n/a") : withSpread(value, lo, hi, summary.runs);
    lines.push(
      `| ${c.file} | ${c.query} | ${c.engine ?? "n/a"} | ${dqs} | ${s(c.queue_wait_s)} | ${s(c.load_s)} | ${s(c.execute_s)} | ${s(c.write_s)} | ${s(c.other_s)} | ` +
        `${ref(c.sqlite3_s, c.sqlite3_min_s, c.sqlite3_max_s, c.sqlite3_error)} | ${ref(c.duckdb_s, c.duckdb_min_s, c.duckdb_max_s, c.duckdb_error)} | ` +
        `${c.dqs_over_sqlite3 ?? "n/a"} | ${c.dqs_over_duckdb ?? "n/a"} | ${c.result_rows ?? "n/a"} | ${matchText(c)} |`,
    );
  }
  const failures = summary.cases.filter((c) => c.dqs_error || c.sqlite3_error || c.duckdb_error);
  const mismatches = summary.cases.filter((c) => c.mismatch);
  const notes = summary.cases.filter((c) => c.notes.length);
  if (failures.length || mismatches.length || notes.length) lines.push("");
  for (const c of failures) {
    const failedAfter = c.per_run.find((r) => !r.dqs_ok)?.dqs_s;
    if (c.dqs_error)
      lines.push(
        `- ${c.file} ${c.query}: dqs failed${failedAfter ? ` after ${s(failedAfter)} s` : ""}: ${cell(c.dqs_error).slice(0, 400)}`,
      );
    if (c.sqlite3_error) lines.push(`- ${c.file} ${c.query}: sqlite3 failed: ${cell(c.sqlite3_error).slice(0, 300)}`);
    if (c.duckdb_error) lines.push(`- ${c.file} ${c.query}: DuckDB failed: ${cell(c.duckdb_error).slice(0, 300)}`);
  }
  for (const c of mismatches) lines.push(`- ${c.file} ${c.query} rows differ: ${cell(c.mismatch!).slice(0, 400)}`);
  for (const c of notes) lines.push(`- ${c.file} ${c.query}: ${cell(c.notes[0]!).slice(0, 300)}`);
  renderRepeat(summary, lines);
  renderFirstAnswer(summary, lines);
  lines.push("");
  lines.push("## Query memory");
  lines.push("");
  lines.push(
    "Loaded: CSV bytes the query read. Held: the engine's PeakMemoryBytes (WebAssembly heap + database pages), " +
      "also per CSV byte of the file (the engine Worker measures it and reports it in the query's status; a " +
      "table-store query reports 0: SQLite's pages in the Durable Object are not counted). " +
      "Read in: the isolate the memory pass read, where the query runs (sql.js: the engine Worker `dqs-engine`; " +
      "table store: the table store Worker `dqs-store`, whose class TableStore is). " +
      "Isolate held Δ: that isolate's V8 heap used + ArrayBuffers read after forced " +
      "full GCs during the query, peak above the same before (WebAssembly memory, where sql.js works, is not in it: " +
      "these are the JavaScript side's bytes; a reading waits while sql.js runs, so a query gets only a few, between its " +
      "steps); isolate held peak: that peak in all; isolate Δ incl. garbage: the same read without forcing GCs, in a " +
      "run of its own (DevTools, untimed memory pass). " +
      "workerd RSS Δ: peak of the summed RSS of the three workerd processes that run the Workers (API, engine, table " +
      "stores, one `wrangler dev` process group each, with the local D1/R2/queue emulation) minus before (timed runs)." +
      isolateLine(summary, "queries") +
      isolateLine(summary, "store queries"),
  );
  lines.push("");
  lines.push(
    "| file | query | engine | read in | loaded | held | held/CSV B | isolate held Δ | isolate held peak | isolate Δ incl. garbage | workerd RSS Δ |",
  );
  lines.push("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|");
  for (const c of summary.cases)
    lines.push(
      `| ${c.file} | ${c.query} | ${c.engine ?? "n/a"} | ${c.isolate_worker ?? "n/a"} | ${mb(c.bytes_loaded)} | ${mb(c.peak_memory_bytes)} | ${c.held_bytes_per_csv_byte ?? "n/a"} | ` +
        `${mb(c.isolate_held_delta_bytes)} | ${mb(c.isolate_held_peak_total_bytes)} | ${mb(c.isolate_delta_incl_garbage_bytes)} | ${mb(c.workerd_rss_delta_bytes)} |`,
    );
  lines.push("");
  lines.push("## Upload");
  lines.push("");
  lines.push(
    "Multipart POST streamed from disk; MB/s of the uploaded bytes (10^6 B/s) until the response. " +
      "Query-ready: seconds from the response until the column images were built by the queue (the bench waits for them " +
      "before the next upload and before querying; queries would read the CSV until then). " +
      "Held Δ (the peak memory figure): the API Worker's isolate's V8 heap used + ArrayBuffers read after forced full GCs " +
      "while the upload ran, peak above the same before (median of the untimed memory pass's uploads; readings: how many " +
      "per upload, each takes tens of ms); held peak: that peak in all. Isolate Δ incl. garbage: the same read without " +
      "forcing GCs, in an upload of its own (mostly garbage V8 has not collected yet). The summed RSS of the three workerd " +
      "processes running the Workers (API, engine, table stores: the upload runs in the API's, the store build it starts " +
      "in the store's) above the same before, and the same for the three wrangler proxy workerd processes (timed runs)." +
      isolateLine(summary, "uploads") +
      (summary.upload_cli.length
        ? " Through the CLI: the command line built from the sources (`dqs upload FILE`, a Node process of its own, " +
          "logged in with a pasted refresh token) uploading the same file to a data item of its own, right after the " +
          "row above was query-ready; timed from the process's start to its exit, Node's start included."
        : ""),
  );
  lines.push("");
  lines.push(
    "| file | gzip | bytes | seconds | MB/s | CSV MB/s | query-ready s | images | held Δ | readings | held peak | isolate Δ incl. garbage | workerd RSS Δ | proxy RSS Δ |",
  );
  lines.push("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
  for (const u of summary.upload) {
    lines.push(
      `| ${u.file} | ${u.gzip ? "yes" : "no"} | ${mb(u.bytes)} | ${s(u.seconds)} | ${rateText(u, summary.runs)} | ${u.csv_mb_per_s ?? "n/a"} | ` +
        `${u.query_ready_failures ? `**not ready** (${u.query_ready_failures})` : s(u.query_ready_s)} | ` +
        `${u.column_image_bytes ? mb(u.column_image_bytes.reduce((a, b) => a + b, 0)) : "n/a"} | ` +
        `${mb(u.isolate_held_bytes)} | ${u.isolate_held_samples.length ? u.isolate_held_samples.join(", ") : "n/a"} | ` +
        `${mb(u.isolate_held_peak_total_bytes)} | ${mb(u.isolate_delta_incl_garbage_bytes)} | ${mb(u.workerd_rss_peak_bytes)}` +
        (summary.runs > 1 ? ` (first run ${mb(u.workerd_rss_first_run_bytes)})` : "") +
        ` | ${mb(u.proxy_peak_memory_bytes)} |`,
    );
    const cli = summary.upload_cli.find((c) => c.file === u.file);
    if (cli)
      lines.push(
        `| ${cli.file} through the CLI | ${cli.gzip ? "yes" : "no"} | ${mb(cli.bytes)} | ${s(cli.seconds)} | ` +
          `${rateText(cli, summary.runs)} | ${cli.csv_mb_per_s ?? "n/a"} | ` +
          `${cli.query_ready_failures ? `**not ready** (${cli.query_ready_failures})` : s(cli.query_ready_s)} | ` +
          "n/a | n/a | n/a | n/a | n/a | n/a | n/a |",
      );
  }
  renderFloor(summary, lines);
  renderConcurrency(summary, lines);
  renderReuse(summary, lines);
  lines.push("");
  lines.push("## Targets (issues 6 and 12)");
  lines.push("");
  lines.push("| issue | target | figure | met |");
  lines.push("|---|---|---|---|");
  for (const t of summary.targets)
    lines.push(
      `| ${t.issue} | ${cell(t.target)} | ${cell(t.figure)} | ${t.met === null ? "n/a" : t.met ? "yes" : "**no**"} |`,
    );
  lines.push("");
  return lines.join("\n");
}

/** An upload's MB/s cell: the median (and the spread over several runs), or why it failed. */
function rateText(
  u: {
    mb_per_s: number | null;
    mb_per_s_min: number | null;
    mb_per_s_max: number | null;
    failures: number;
    error: string | null;
  },
  runs: number,
): string {
  if (u.mb_per_s === null) return `**FAILED**: ${cell(u.error ?? "?")}`;
  return (
    (runs > 1 ? `${u.mb_per_s} (${u.mb_per_s_min}–${u.mb_per_s_max})` : `${u.mb_per_s}`) +
    (u.failures ? ` (${u.failures} failed: ${cell(u.error ?? "")})` : "")
  );
}

function renderRepeat(summary: Summary, lines: string[]): void {
  if (!summary.cases.some((c) => c.sqlite3_query_s !== null || c.duckdb_query_s !== null)) return;
  lines.push("", "## Repeat: the query on prepared data", "");
  lines.push(
    "dqs on data already query-ready (end to end, as above) against the `sqlite3` tool querying a database file it " +
      "imported before (the statement's own time, `.timer on`, real) and DuckDB querying the table it loaded before " +
      "(the query alone, in process). Same rows: dqs's rows against each.",
  );
  lines.push("");
  lines.push(
    "| file | query | engine | dqs s | sqlite3 query s | DuckDB query s | dqs/sqlite3 query | dqs/DuckDB query |",
  );
  lines.push("|---|---|---|--:|--:|--:|--:|--:|");
  for (const c of summary.cases)
    lines.push(
      `| ${c.file} | ${c.query} | ${c.engine ?? "n/a"} | ${c.dqs_s === null ? "**FAILED**" : withSpread(c.dqs_s, c.dqs_min_s, c.dqs_max_s, summary.runs)} | ` +
        `${c.sqlite3_query_s === null ? (c.sqlite3_query_error ? "**FAILED**" : "n/a") : withSpread(c.sqlite3_query_s, c.sqlite3_query_min_s, c.sqlite3_query_max_s, summary.runs)} | ` +
        `${c.duckdb_query_s === null ? (c.duckdb_query_error ? "**FAILED**" : "n/a") : withSpread(c.duckdb_query_s, c.duckdb_query_min_s, c.duckdb_query_max_s, summary.runs)} | ` +
        `${c.dqs_over_sqlite3_query ?? "n/a"} | ${c.dqs_over_duckdb_query ?? "n/a"} |`,
    );
}

function renderFirstAnswer(summary: Summary, lines: string[]): void {
  if (!summary.first_answer.length) return;
  lines.push("", "## First answer: upload start → Q1 downloaded", "");
  lines.push(
    "dqs: the upload, then Q1 submitted as soon as the upload answered (whatever the service still prepares: a " +
      "query on an item without its column images reads the CSV; one on an item whose table store is being built " +
      "waits for it), to Q1's result downloaded. sqlite3: import + Q1 in one process; DuckDB: `read_csv` + Q1 " +
      "(the Q1 rows' references above). Same rows: the first answer's rows against sqlite3's.",
  );
  lines.push("");
  lines.push(
    "| file | dqs s | upload s | Q1 s | engine | sqlite3 import+query s | DuckDB read_csv+query s | dqs/sqlite3 | dqs/DuckDB | same rows |",
  );
  lines.push("|---|--:|--:|--:|---|--:|--:|--:|--:|---|");
  for (const a of summary.first_answer)
    lines.push(
      `| ${a.file} | ${a.dqs_s === null ? `**FAILED**: ${cell(a.error ?? "?").slice(0, 200)}` : withSpread(a.dqs_s, a.dqs_min_s, a.dqs_max_s, summary.runs)} | ` +
        `${s(a.upload_s)} | ${s(a.query_s)} | ${a.engine ?? "n/a"} | ${s(a.sqlite3_s)} | ${s(a.duckdb_s)} | ` +
        `${a.dqs_over_sqlite3 ?? "n/a"} | ${a.dqs_over_duckdb ?? "n/a"} | ${a.matches_sqlite3 === null ? "n/a" : a.matches_sqlite3 ? "sqlite3 ✓" : `sqlite3 ✗ ${cell(a.mismatch ?? "")}`} |`,
    );
}

function renderFloor(summary: Summary, lines: string[]): void {
  if (!summary.upload.some((u) => u.floor_mb_per_s !== null || u.table_store)) return;
  lines.push("", "## Upload floor and table stores", "");
  lines.push(
    "Floor: the same multipart bytes POSTed the same way to a bare Worker of its own (`bench/floor`, `wrangler dev` " +
      "on 127.0.0.1) that pipes the request body into local R2 (`env.BUCKET.put`), right before each dqs upload; " +
      "fraction: dqs's MB/s over the floor's (medians). Table store: rows and bytes on disk once ready, as the " +
      "storage endpoint reports them (none: column images).",
  );
  lines.push("");
  lines.push("| file | bytes | dqs MB/s | floor MB/s | fraction of floor | query-ready s | table store |");
  lines.push("|---|--:|--:|--:|--:|--:|---|");
  for (const u of summary.upload)
    lines.push(
      `| ${u.file} | ${mb(u.bytes)} | ${u.mb_per_s ?? "n/a"} | ` +
        `${u.floor_mb_per_s === null ? (u.floor_error ? `**FAILED**: ${cell(u.floor_error)}` : "n/a") : summary.runs > 1 ? `${u.floor_mb_per_s} (${u.floor_mb_per_s_min}–${u.floor_mb_per_s_max})` : u.floor_mb_per_s} | ` +
        `${u.fraction_of_floor === null ? "n/a" : `${(u.fraction_of_floor * 100).toFixed(1)}%`} | ` +
        `${u.query_ready_failures ? `**not ready** (${u.query_ready_failures})` : s(u.query_ready_s)} | ` +
        `${u.table_store ? `${u.table_store.State}, ${u.table_store.Rows ?? "?"} rows, ${mb(u.table_store.Bytes)}${u.table_store.Message ? `: ${cell(u.table_store.Message)}` : ""}` : "none"} |`,
    );
}

function renderConcurrency(summary: Summary, lines: string[]): void {
  const c = summary.concurrency;
  if (!c) return;
  lines.push("", `## Concurrency: ${c.users} × ${c.query} on ${c.file} at once`, "");
  lines.push(
    `${c.users} users (each logged in and granted read on the dataset; QUERY_MAX_RUNNING_PER_USER is 1 per user) ` +
      "submit the query at the same moment; latency: each one's submit → result downloaded; throughput: succeeded " +
      "queries over the time from the first submit to the last download.",
  );
  lines.push("");
  lines.push(
    "| succeeded | wall s | queries/s | latency median s | latency max s | queue wait median s | queue wait max s | execute median s | engine | same rows |",
  );
  lines.push("|--:|--:|--:|--:|--:|--:|--:|--:|---|---|");
  lines.push(
    `| ${c.succeeded} of ${c.users} | ${s(c.wall_s)} | ${c.throughput_qps ?? "n/a"} | ${s(c.latency_median_s)} | ${s(c.latency_max_s)} | ` +
      `${s(c.queue_wait_median_s)} | ${s(c.queue_wait_max_s)} | ${s(c.execute_median_s)} | ${c.engine ?? "n/a"} | ${c.same_rows ? "✓" : "✗"} |`,
  );
  if (c.error) lines.push("", `- a query failed: ${cell(c.error).slice(0, 400)}`);
}

function renderReuse(summary: Summary, lines: string[]): void {
  if (!summary.reuse.length) return;
  lines.push("", "## Reuse: Q1 repeated, end to end", "");
  lines.push(
    "The query once with `Reuse: false` (it runs), then the same SQL again on the same version, each time end to " +
      "end (submit with Prefer: wait → status → result downloaded through the 302): the service answers each repeat " +
      "from the first run's result (issue 13). Reused: repeats whose status says `Reused: true`; same rows: each " +
      "repeat's rows against the first run's; submit: until the submit's answer, which already says the query " +
      "succeeded.",
  );
  lines.push("");
  lines.push(
    "| file | query | first run s | engine | repeats | repeat median s | repeat min–max s | submit median s | first/repeat | reused | same rows |",
  );
  lines.push("|---|---|--:|---|--:|--:|--:|--:|--:|--:|---|");
  for (const r of summary.reuse)
    lines.push(
      `| ${r.file} | ${r.query} | ${r.first_s === null ? "**FAILED**" : s(r.first_s)} | ${r.first_engine ?? "n/a"} | ${r.repeats} | ` +
        `${s(r.repeat_median_s)} | ${s(r.repeat_min_s)}–${s(r.repeat_max_s)} | ${s(r.submit_median_s)} | ${r.first_over_repeat ?? "n/a"} | ` +
        `${r.reused} of ${r.repeats} | ${r.same_rows ? "✓" : "✗"} |`,
    );
  for (const r of summary.reuse) if (r.error) lines.push("", `- ${r.file} ${r.query}: ${cell(r.error).slice(0, 400)}`);
}

/** Which isolate the memory pass read for `role`, for the text above a table ("" when there was no memory pass). */
function isolateLine(summary: Summary, role: IsolateNote["role"]): string {
  const note = summary.memory_pass.isolates.find((i) => i.role === role);
  if (!note) return "";
  // sql.js queries are read in both engine lanes (the quick one and, for a query moved on, the long one).
  const long = role === "queries" ? summary.memory_pass.isolates.find((i) => i.role === "long queries") : undefined;
  if (long?.ok && note.ok)
    return ` Isolate figures read in ${note.worker}'s and ${long.worker}'s isolates (the engine's two lanes; the larger growth of the two).`;
  if (!note.ok)
    return ` Isolate figures: not measured (no checked DevTools session on ${note.worker ?? "the Worker"}'s isolate).`;
  // The port changes from run to run: the table says how, latest.json also where.
  const via = note.via?.replace(/, port \d+$/, "");
  return ` Isolate figures read in ${note.worker}'s isolate (${via}; its scripts include ${note.script?.split("/").pop()}).`;
}
