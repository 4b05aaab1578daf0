/** Medians and spreads over the runs, the targets of issue 6, and the Markdown table. */
import type { QueryStatus } from "./dqs.ts";
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
  /** Peak RSS of the workerd process running the Workers (API and engine) during the query, minus its RSS before, bytes. */
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
}

/** Which isolate the memory pass read for uploads (the API Worker) or queries (the engine Worker), and how it knew. */
export interface IsolateNote {
  role: "uploads" | "queries";
  /** The Worker's name in its config (`dqs`, `dqs-engine`). */
  worker: string | null;
  /** How the session was reached: wrangler's inspector proxy, or workerd's own inspector port. */
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
  cases: CaseRun[];
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
      mismatches: r.mismatches,
    })),
  };
}

function summarizeUpload(runs: UploadRun[], file: BenchFile, memoryRuns: UploadRun[]) {
  const ok = runs.filter((r) => r.ok && r.seconds > 0);
  const rate = spread(ok.map((r) => file.bytes / 1e6 / r.seconds));
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
    /** The workerd process that runs the Workers, API and engine (and the local D1/R2/queue emulation): peak RSS (VmHWM after a reset) minus RSS before. */
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
      worker_rss: r.workerRss,
      proxy_rss: r.proxyRss,
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
    targets: targets(cases, upload, input.memoryBudgetBytes),
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

type CaseSummary = ReturnType<typeof summarizeCase>;
type UploadSummary = ReturnType<typeof summarizeUpload>;

/** The targets of issue 6, each with its figure; `met` is null when the figure is missing. */
function targets(cases: CaseSummary[], upload: UploadSummary[], budget: number | null) {
  const find = (file: string, query: string) => cases.find((c) => c.file === file && c.query === query);
  const list: { target: string; figure: string; met: boolean | null }[] = [];
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
      figure: q1m.held_bytes_per_csv_byte === null ? "n/a" : `${q1m.held_bytes_per_csv_byte}`,
      met: q1m.held_bytes_per_csv_byte === null ? null : q1m.held_bytes_per_csv_byte <= 0.7,
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
    "Seconds, end to end (dqs: submit → result downloaded; sqlite3 and DuckDB: import + query). " +
      "Queue, load, execute, write: the query's own recorded timings; other: the rest of end to end " +
      "(submit, status polling, download, and whatever the timings do not cover).",
  );
  lines.push("");
  lines.push(
    "| file | query | dqs s | queue | load | execute | write | other | sqlite3 s | DuckDB s | dqs/sqlite3 | dqs/DuckDB | rows | same rows |",
  );
  lines.push("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
  for (const c of summary.cases) {
    const dqs =
      c.dqs_s === null
        ? "**FAILED** ↓"
        : withSpread(c.dqs_s, c.dqs_min_s, c.dqs_max_s, summary.runs) +
          (c.dqs_failures ? ` (${c.dqs_failures} of ${c.per_run.length} failed ↓)` : "");
    const ref = (value: number | null, lo: number | null, hi: number | null, error: string | null) =>
      value === null ? (error ? "**FAILED** ↓" : "n/a") : withSpread(value, lo, hi, summary.runs);
    lines.push(
      `| ${c.file} | ${c.query} | ${dqs} | ${s(c.queue_wait_s)} | ${s(c.load_s)} | ${s(c.execute_s)} | ${s(c.write_s)} | ${s(c.other_s)} | ` +
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
  lines.push("");
  lines.push("## Query memory");
  lines.push("");
  lines.push(
    "Loaded: CSV bytes the query read. Held: the engine's PeakMemoryBytes (WebAssembly heap + database pages), " +
      "also per CSV byte of the file (the engine Worker measures it and reports it in the query's status). " +
      "Isolate held Δ: the engine Worker's isolate's V8 heap used + ArrayBuffers read after forced " +
      "full GCs during the query, peak above the same before (WebAssembly memory, where sql.js works, is not in it: " +
      "these are the JavaScript side's bytes; a reading waits while sql.js runs, so a query gets only a few, between its " +
      "steps); isolate held peak: that peak in all; isolate Δ incl. garbage: the same read without forcing GCs, in a " +
      "run of its own (DevTools, untimed memory pass). " +
      "workerd RSS Δ: peak RSS of the workerd process that runs both Workers (and the local D1/R2/queue emulation) " +
      "minus before (timed runs)." +
      isolateLine(summary, "queries"),
  );
  lines.push("");
  lines.push(
    "| file | query | loaded | held | held/CSV B | isolate held Δ | isolate held peak | isolate Δ incl. garbage | workerd RSS Δ |",
  );
  lines.push("|---|---|--:|--:|--:|--:|--:|--:|--:|");
  for (const c of summary.cases)
    lines.push(
      `| ${c.file} | ${c.query} | ${mb(c.bytes_loaded)} | ${mb(c.peak_memory_bytes)} | ${c.held_bytes_per_csv_byte ?? "n/a"} | ` +
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
      "forcing GCs, in an upload of its own (mostly garbage V8 has not collected yet). The RSS of the workerd process " +
      "running the Workers above its RSS before (it runs the engine Worker too, and the local D1/R2/queue emulation), " +
      "and the same for wrangler's proxy workerd process (timed runs)." +
      isolateLine(summary, "uploads"),
  );
  lines.push("");
  lines.push(
    "| file | gzip | bytes | seconds | MB/s | CSV MB/s | query-ready s | images | held Δ | readings | held peak | isolate Δ incl. garbage | workerd RSS Δ | proxy RSS Δ |",
  );
  lines.push("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
  for (const u of summary.upload) {
    const rate =
      u.mb_per_s === null
        ? `**FAILED**: ${cell(u.error ?? "?")}`
        : (summary.runs > 1 ? `${u.mb_per_s} (${u.mb_per_s_min}–${u.mb_per_s_max})` : `${u.mb_per_s}`) +
          (u.failures ? ` (${u.failures} failed: ${cell(u.error ?? "")})` : "");
    lines.push(
      `| ${u.file} | ${u.gzip ? "yes" : "no"} | ${mb(u.bytes)} | ${s(u.seconds)} | ${rate} | ${u.csv_mb_per_s ?? "n/a"} | ` +
        `${u.query_ready_failures ? `**not ready** (${u.query_ready_failures})` : s(u.query_ready_s)} | ` +
        `${u.column_image_bytes ? mb(u.column_image_bytes.reduce((a, b) => a + b, 0)) : "n/a"} | ` +
        `${mb(u.isolate_held_bytes)} | ${u.isolate_held_samples.length ? u.isolate_held_samples.join(", ") : "n/a"} | ` +
        `${mb(u.isolate_held_peak_total_bytes)} | ${mb(u.isolate_delta_incl_garbage_bytes)} | ${mb(u.workerd_rss_peak_bytes)}` +
        (summary.runs > 1 ? ` (first run ${mb(u.workerd_rss_first_run_bytes)})` : "") +
        ` | ${mb(u.proxy_peak_memory_bytes)} |`,
    );
  }
  lines.push("");
  lines.push("## Targets (issue 6)");
  lines.push("");
  lines.push("| target | figure | met |");
  lines.push("|---|---|---|");
  for (const t of summary.targets)
    lines.push(`| ${cell(t.target)} | ${cell(t.figure)} | ${t.met === null ? "n/a" : t.met ? "yes" : "**no**"} |`);
  lines.push("");
  return lines.join("\n");
}

/** Which isolate the memory pass read for `role`, for the text above a table ("" when there was no memory pass). */
function isolateLine(summary: Summary, role: IsolateNote["role"]): string {
  const note = summary.memory_pass.isolates.find((i) => i.role === role);
  if (!note) return "";
  if (!note.ok)
    return ` Isolate figures: not measured (no checked DevTools session on ${note.worker ?? "the Worker"}'s isolate).`;
  // The port changes from run to run: the table says how, latest.json also where.
  const via = note.via?.replace(/, port \d+$/, "");
  return ` Isolate figures read in ${note.worker}'s isolate (${via}; its scripts include ${note.script?.split("/").pop()}).`;
}
