/**
 * `npm run bench:fairness`: two users on one `wrangler dev` (issue 15, item 5).
 * User A floods the service with heavy queries; user B, meanwhile, runs small
 * queries and plain API requests, and the run measures how long B waits.
 * See bench/README.md, "Fairness run".
 *
 *   npm run bench:fairness               as `npm run dev` (QUERY_MAX_RUNNING_PER_USER 1, QUERY_MAX_QUEUED_PER_USER 50)
 *   npm run bench:fairness -- --quick    A's queries count to 1M instead of 3M; 4 queries of B instead of 6
 *   npm run bench:fairness -- --var QUERY_MAX_RUNNING_PER_USER=2
 *
 * Exit code 1 when a query of B failed, when B's median query latency is over
 * the bound (QUERY_MAX_RUNNING_PER_USER of A's heavy queries back to back, as
 * measured alone, + 3 s: the local queue runs one message at a time),
 * or when the bench could not run; 2 when the whole run passed 10 minutes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client, jsonAnswer, login, type Answer as BenchAnswer, type QueryRun, type QueryStatus } from "./dqs.ts";
import { killAllStarted, ROOT, startWranglerDev, varsFromOptions, type DevServer } from "./server.ts";

const BENCH = join(ROOT, "bench");
const USER_A = "alice";
const USER_B = "bob";
const B_DATASET = "small";
const B_TABLE = `${USER_B}.${B_DATASET}.t`;
/** The first burst: one runs and 49 wait (as npm run dev), so all fit under QUERY_MAX_QUEUED_PER_USER (50). */
const A_BURST = 50;
/** Then these many more, to meet the limit (429 with Retry-After). */
const A_EXTRA = 10;
const B_GAP_MS = 2_000;
/** The whole run, start of wrangler to its stop. */
const RUN_LIMIT_MS = 10 * 60_000;
/** Every HTTP request of the bench gives up after this (a submit with Prefer: wait=30 answers within ~30 s). */
const REQUEST_TIMEOUT_MS = 60_000;
/** A's queries whose status is sampled while they wait (indexes into A's accepted queries). */
const SAMPLED = [9, 29, 49, 59];
const SAMPLE_EVERY_MS = 5_000;
/** A queue batch shorter than this is one of B's small queries (A's heavy ones take hundreds of ms at least). */
const SHORT_BATCH_MS = 150;
/** A's submits in flight at once: "as fast as the API accepts them" (one at a time, a submit takes ~0.3 s while the engine is busy, so A's line would drain as fast as it fills). */
const SUBMIT_CONCURRENCY = 8;
const PROBE_EVERY_MS = 500;

const log = (line: string) => process.stderr.write(`[fairness ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function options() {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      var: { type: "string", multiple: true, default: [] },
      help: { type: "boolean", default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(
      [
        "npm run bench:fairness -- [--quick] [--var NAME=VALUE ...]",
        "  --quick   A's heavy queries count to 1M instead of 3M; B runs 4 queries instead of 6",
        "  --var     passed to wrangler dev as --var NAME:VALUE (e.g. QUERY_MAX_RUNNING_PER_USER=2)",
        "",
      ].join("\n"),
    );
    process.exit(0);
  }
  return { quick: values.quick, vars: varsFromOptions(values.var) };
}

/** An answer, and how long it took (ms to the last byte). */
type Answer = BenchAnswer & { ms: number };

/** One request, timed; a network error or time-out is status 0. */
async function call(url: string, token: string, init: RequestInit = {}): Promise<Answer> {
  const started = performance.now();
  const answer = await jsonAnswer(
    fetch(url, {
      ...init,
      headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    }),
  );
  return { ...answer, ms: performance.now() - started };
}

interface Submitted {
  index: number;
  status: number;
  ms: number;
  queryId: string | null;
  retryAfter: string | null;
  message: string;
}

/** Each submit runs (Reuse false): a repeated SQL must take its turn, not answer from an earlier result. */
async function submit(url: string, token: string, sql: string, index: number): Promise<Submitted> {
  const answer = await call(`${url}/v1/query`, token, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ Sql: sql, Reuse: false }),
  });
  return {
    index,
    status: answer.status,
    ms: Math.round(answer.ms),
    queryId: (answer.json?.Data as { QueryId?: string } | undefined)?.QueryId ?? null,
    retryAfter: answer.retryAfter,
    message: answer.json?.Message ?? answer.text.slice(0, 300),
  };
}

/** Submits `count` queries (alternating `sqls`), SUBMIT_CONCURRENCY at a time; results in submit order. */
async function submitMany(url: string, token: string, sqls: string[], first: number, count: number) {
  const results: Submitted[] = [];
  let next = first;
  const worker = async () => {
    while (next < first + count) {
      const index = next++;
      results.push(await submit(url, token, sqls[index % sqls.length]!, index));
    }
  };
  await Promise.all(Array.from({ length: SUBMIT_CONCURRENCY }, worker));
  return results.sort((x, y) => x.index - y.index);
}

/** The durations (ms) of the queue batches wrangler logged, "QUEUE dqs-queries 1/1 (523ms)", in order. */
function queueBatches(output: string): number[] {
  return [...output.matchAll(/QUEUE dqs-queries \d+\/\d+ \((\d+)ms\)/g)].map((m) => Number(m[1]));
}

interface SmallRun {
  ok: boolean;
  seconds: number;
  message: string | null;
  status: QueryStatus | null;
  /** The first status B saw (its message while it waited). */
  firstStatus: string | null;
  /** Queue batches wrangler logged from just before the submit, and from its answer, to B's own result. */
  batchesFromSubmit: number[];
  batchesFromAnswer: number[];
}

/**
 * B's small query: submit (no Prefer: wait, so the answer comes as soon as it is queued), status every
 * 100 ms until it ends, then the result through the 302 (the download without the token). `seconds` runs
 * from just before the submit to the result's last byte. `output` is wrangler's log so far.
 */
async function smallQuery(url: string, token: string, sql: string, output: () => string): Promise<SmallRun> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const markSubmit = output().length;
  const submitted = await submit(url, token, sql, -1);
  const markAnswer = output().length;
  const fail = (message: string, status: QueryStatus | null = null, firstStatus: string | null = null) => ({
    ok: false,
    seconds: seconds(),
    message,
    status,
    firstStatus,
    batchesFromSubmit: [],
    batchesFromAnswer: [],
  });
  if (submitted.status !== 200 || !submitted.queryId)
    return fail(`submit answered ${submitted.status}: ${submitted.message}`);
  let status: QueryStatus | null = null;
  let firstStatus: string | null = null;
  while (seconds() < 180) {
    const answer = await call(`${url}/v1/query/${submitted.queryId}/status`, token);
    const data = answer.json?.Data as QueryStatus | undefined;
    if (answer.status === 200 && data) {
      status = data;
      firstStatus ??= `${data.Status}: ${data.Message}`;
      if (data.Status === "succeeded" || data.Status === "failed" || data.Status === "cancelled") break;
    }
    await sleep(100);
  }
  if (status?.Status !== "succeeded")
    return fail(`${status?.Status ?? "no status"}: ${status?.Message ?? ""}`, status, firstStatus);
  const redirect = await fetch(`${url}/v1/query/${submitted.queryId}/results/rawdata`, {
    headers: { authorization: `Bearer ${token}` },
    redirect: "manual",
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const to = redirect.headers.get("location");
  await redirect.body?.cancel();
  if (redirect.status !== 302 || !to) return fail(`rawdata answered ${redirect.status}`, status, firstStatus);
  const download = await fetch(new URL(to, url), { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const csv = await download.text();
  if (download.status !== 200)
    return fail(`download answered ${download.status}: ${csv.slice(0, 200)}`, status, firstStatus);
  const log = output();
  return {
    ok: true,
    seconds: seconds(),
    message: null,
    status,
    firstStatus,
    batchesFromSubmit: queueBatches(log.slice(markSubmit)),
    batchesFromAnswer: queueBatches(log.slice(markAnswer)),
  };
}

/** The A batches before B's own (the first short one); null when B's batch is not among them. */
function aBatchesBefore(batches: number[]): number[] | null {
  const own = batches.findIndex((ms) => ms < SHORT_BATCH_MS);
  return own >= 0 ? batches.slice(0, own) : null;
}

type Listed = QueryStatus & { CreatedAt: string; UpdatedAt: string };

/** The user's queries (one page of 100: A never has more) counted by status. */
async function listQueries(url: string, token: string) {
  const answer = await call(`${url}/v1/me/queries?limit=100`, token);
  const list = answer.status === 200 ? ((answer.json?.Data as { QueryList: Listed[] }).QueryList ?? []) : null;
  const count = (status: QueryStatus["Status"]) => list?.filter((q) => q.Status === status).length ?? null;
  return {
    ok: list !== null,
    list: list ?? [],
    succeeded: count("succeeded"),
    failed: count("failed"),
    cancelled: count("cancelled"),
    running: count("running"),
    queued: count("queued"),
  };
}

const median = (values: number[]) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const max = (values: number[]) => (values.length ? Math.max(...values) : null);
const round = (value: number | null, digits = 3) => (value === null ? null : Number(value.toFixed(digits)));
const fmt = (value: number | null, unit = "s", digits = 2) =>
  value === null ? "n/a" : `${value.toFixed(digits)} ${unit}`;

interface BQuery {
  round: number;
  sql: string;
  ok: boolean;
  seconds: number;
  message: string | null;
  queue_wait_ms: number | null;
  execute_ms: number | null;
  /** Seconds from the start of A's burst to B's submit. */
  submitted_at_s: number;
  a_succeeded_before: number | null;
  /**
   * A's queue batches (one query each) that wrangler logged as ended between B's submit and B's own batch:
   * the local queue runs one batch at a time, so these are the A queries B waited for (the first was
   * already running when B came); and how long they took in all.
   */
  a_batches_before_b: number | null;
  a_batches_before_b_s: number | null;
  /** The same counted from the submit's answer (B's message was in the queue by then): a lower bound. */
  a_batches_before_b_after_answer: number | null;
  first_status: string | null;
  a_waiting_or_queued_at_submit: number | null;
  a_running_at_submit: number | null;
}

function machine() {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? "?",
    cores: cpu.length,
    ram_bytes: totalmem(),
    os: `${process.platform} ${release()}`,
    node: process.version,
  };
}

async function main() {
  const opts = options();
  const heavyRows = opts.quick ? 1_000_000 : 3_000_000;
  const bRounds = opts.quick ? 4 : 6;
  const cte = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT ${heavyRows})`;
  const heavy = [`${cte} SELECT count(*) FROM c`, `${cte} SELECT x FROM c WHERE x % 100000 = 0`];
  const small = ["SELECT 1", `SELECT count(*) FROM ${B_TABLE}`];
  const startedAt = new Date();
  const runDeadline = Date.now() + RUN_LIMIT_MS;

  let server: DevServer | null = null;
  const overTime = setTimeout(() => {
    log(`the run passed ${RUN_LIMIT_MS / 60_000} minutes: stopping wrangler dev and giving up`);
    killAllStarted();
    process.exit(2);
  }, RUN_LIMIT_MS);
  overTime.unref();
  const interrupted = () => {
    log("interrupted: stopping wrangler dev");
    killAllStarted();
    process.exit(130);
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  process.once("exit", killAllStarted);

  try {
    log(
      `starting wrangler dev (fresh state${Object.keys(opts.vars).length ? `, vars ${JSON.stringify(opts.vars)}` : ""}) ...`,
    );
    server = await startWranglerDev(opts.vars);
    const url = server.url;
    log(`wrangler dev on ${url}`);
    const tokenA = await login(url, USER_A);
    const tokenB = await login(url, USER_B);
    const a = new Client(url, tokenA);
    const b = new Client(url, tokenB);

    // B's tiny table, uploaded and made query-ready before the burst: its column-image build goes
    // through the same queue as queries, and would otherwise wait behind A's.
    await b.createDataset(USER_B, B_DATASET);
    mkdirSync(join(BENCH, "data"), { recursive: true });
    const csvPath = join(BENCH, "data/fairness-small.csv");
    writeFileSync(
      csvPath,
      "id,v\n" + Array.from({ length: 1000 }, (_, i) => `${i + 1},${((i * 37) % 101) / 10}`).join("\n") + "\n",
    );
    const uploaded = await b.upload(USER_B, B_DATASET, "t", csvPath);
    if (uploaded.status !== 200) throw new Error(`B's upload failed: ${uploaded.status} ${uploaded.message}`);
    const ready = await b.waitQueryReady(USER_B, B_DATASET, "t", 60_000);
    log(`B uploaded ${B_TABLE} (1000 rows) in ${uploaded.seconds.toFixed(2)} s; query-ready: ${ready.ready}`);

    // Idle engine: warm-up, then B's small queries, B's API calls and A's heavy queries alone.
    const running = server;
    const bQuery = (sql: string) => smallQuery(url, tokenB, sql, running.output);
    const warm = await b.query("SELECT 1", { pollMs: 200, timeoutMs: 180_000 });
    if (!warm.ok) throw new Error(`warm-up query failed: ${warm.message}`);
    const idleB: { sql: string; seconds: number; ok: boolean }[] = [];
    for (let i = 0; i < 4; i++) {
      const run = await bQuery(small[i % 2]!);
      idleB.push({ sql: small[i % 2]!, seconds: round(run.seconds)!, ok: run.ok });
    }
    const idleApi: number[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await call(`${url}/v1/me/datasets`, tokenB);
      if (answer.status === 200) idleApi.push(answer.ms);
      await sleep(100);
    }
    const aloneA: { sql: string; seconds: number; execute_ms: number | null }[] = [];
    for (const sql of heavy) {
      const run: QueryRun = await a.query(sql, { pollMs: 200, timeoutMs: 180_000 });
      if (!run.ok) throw new Error(`A's heavy query failed alone: ${run.message}`);
      aloneA.push({ sql, seconds: round(run.seconds)!, execute_ms: run.status.Timings?.ExecuteMs ?? null });
    }
    const heavyAloneS = Math.max(...aloneA.map((r) => r.seconds));
    // B's message waits behind the queries of A's that are already in the queue: at most A's running share.
    const runningShare = Number(opts.vars.QUERY_MAX_RUNNING_PER_USER ?? "1");
    const boundS = runningShare * heavyAloneS + 3;
    log(
      `idle: B's small queries ${idleB.map((r) => r.seconds.toFixed(2)).join(", ")} s; ` +
        `A's heavy alone ${aloneA.map((r) => r.seconds.toFixed(2)).join(", ")} s → bound ${boundS.toFixed(1)} s`,
    );

    // A's burst, back to back.
    const burstStart = performance.now();
    const sinceBurst = () => round((performance.now() - burstStart) / 1000)!;
    const burst = await submitMany(url, tokenA, heavy, 0, A_BURST);
    const burstSeconds = sinceBurst();
    const extra = await submitMany(url, tokenA, heavy, A_BURST, A_EXTRA);
    const extraSeconds = round(sinceBurst() - burstSeconds);
    const accepted = [...burst, ...extra].filter((s) => s.status === 200 && s.queryId);
    const tally = (list: Submitted[]) => ({
      accepted: list.filter((s) => s.status === 200).length,
      refused_429: list.filter((s) => s.status === 429).length,
      other: list.filter((s) => s.status !== 200 && s.status !== 429).length,
      retry_after: [...new Set(list.filter((s) => s.status === 429).map((s) => s.retryAfter))],
      submit_ms_median: median(list.map((s) => s.ms)),
      submit_ms_max: max(list.map((s) => s.ms)),
    });
    log(
      `A's burst: ${JSON.stringify(tally(burst))} in ${burstSeconds} s; then ${A_EXTRA} more: ${JSON.stringify(tally(extra))}`,
    );
    const refusal = extra.find((s) => s.status === 429) ?? burst.find((s) => s.status === 429);
    if (refusal) log(`  a 429: Retry-After ${refusal.retryAfter}: ${refusal.message}`);

    // While B runs: A's waiting queries sampled, and B's plain API calls timed.
    let stop = false;
    const samples: { t: number; index: number; status: string; message: string }[] = [];
    const aCounts: { t: number; succeeded: number | null; running: number | null; queued: number | null }[] = [];
    const sampler = (async () => {
      while (!stop && Date.now() < runDeadline) {
        for (const index of SAMPLED) {
          const id = accepted[index]?.queryId;
          if (!id) continue;
          const answer = await call(`${url}/v1/query/${id}/status`, tokenA);
          const data = answer.json?.Data as QueryStatus | undefined;
          if (answer.status === 200 && data)
            samples.push({ t: sinceBurst(), index, status: data.Status, message: data.Message });
        }
        const listed = await listQueries(url, tokenA);
        if (listed.ok)
          aCounts.push({
            t: sinceBurst(),
            succeeded: listed.succeeded,
            running: listed.running,
            queued: listed.queued,
          });
        for (let waited = 0; waited < SAMPLE_EVERY_MS && !stop; waited += 250) await sleep(250);
      }
    })();
    const apiCalls: { t: number; path: string; status: number; ms: number }[] = [];
    const firstB = warm.queryId;
    const prober = (async () => {
      let i = 0;
      while (!stop && Date.now() < runDeadline) {
        const path = i++ % 2 === 0 ? "/v1/me/datasets" : `/v1/query/${firstB}/status`;
        const answer = await call(`${url}${path}`, tokenB);
        apiCalls.push({ t: sinceBurst(), path, status: answer.status, ms: round(answer.ms, 1)! });
        await sleep(PROBE_EVERY_MS);
      }
    })();

    const bQueries: BQuery[] = [];
    for (let i = 0; i < bRounds && Date.now() < runDeadline - 120_000; i++) {
      const sql = small[i % 2]!;
      const before = await listQueries(url, tokenA);
      const submittedAt = sinceBurst();
      const run = await bQuery(sql);
      // The queue batches that ended between B's submit and its own: A's (wrangler logs each at its end).
      const aBatches = aBatchesBefore(run.batchesFromSubmit);
      const aBatchesAfterAnswer = aBatchesBefore(run.batchesFromAnswer);
      const status = run.status;
      const entry: BQuery = {
        round: i + 1,
        sql,
        ok: run.ok,
        seconds: round(run.seconds)!,
        message: run.ok ? null : run.message,
        queue_wait_ms: status?.Timings?.QueueWaitMs ?? null,
        execute_ms: status?.Timings?.ExecuteMs ?? null,
        submitted_at_s: submittedAt,
        a_succeeded_before: before.succeeded,
        a_batches_before_b: aBatches?.length ?? null,
        a_batches_before_b_after_answer: aBatchesAfterAnswer?.length ?? null,
        first_status: run.firstStatus,
        a_batches_before_b_s: aBatches ? round(aBatches.reduce((sum, ms) => sum + ms, 0) / 1000) : null,
        a_waiting_or_queued_at_submit: before.queued,
        a_running_at_submit: before.running,
      };
      bQueries.push(entry);
      log(
        `B #${entry.round} ${sql}: ${run.ok ? "succeeded" : `FAILED (${run.message})`} in ${entry.seconds.toFixed(2)} s ` +
          `(queue wait ${entry.queue_wait_ms} ms); A's queue batches before it: ${entry.a_batches_before_b_after_answer}–${entry.a_batches_before_b} ` +
          `(${entry.a_batches_before_b_s} s); A had ${before.running} running, ${before.queued} queued at submit`,
      );
      await sleep(B_GAP_MS);
    }
    stop = true;
    await Promise.all([sampler, prober]);
    const windowSeconds = sinceBurst();

    // The end of the window: A's record, then A's remaining queries cancelled.
    const final = await listQueries(url, tokenA);
    const aIds = new Set(accepted.map((s) => s.queryId));
    const aBurstDone = final.list.filter((q) => aIds.has(q.QueryId) && q.Status === "succeeded");
    const aRunSeconds = aBurstDone
      .map((q) => q.Timings)
      .filter((t) => t !== null)
      .map((t) => (t.LoadMs + t.ExecuteMs + t.WriteMs) / 1000);
    const unfinished = final.list.filter(
      (q) => aIds.has(q.QueryId) && (q.Status === "queued" || q.Status === "running"),
    );
    let cancelled = 0;
    let cancelOther = 0;
    for (const q of unfinished) {
      const answer = await call(`${url}/v1/query/${q.QueryId}/cancel`, tokenA, { method: "POST" });
      if (answer.status === 200) cancelled++;
      else cancelOther++;
    }
    const afterCancel = await listQueries(url, tokenA);
    log(
      `window ${windowSeconds} s: A succeeded ${final.succeeded}, failed ${final.failed}, running ${final.running}, ` +
        `queued ${final.queued}; cancelled ${cancelled} (${cancelOther} had ended meanwhile); ` +
        `after: queued ${afterCancel.queued}, running ${afterCancel.running}`,
    );

    const bOk = bQueries.filter((q) => q.ok);
    const bSeconds = bQueries.map((q) => q.seconds);
    const bMedian = median(bSeconds);
    const duringApi = apiCalls.filter((c) => c.status === 200).map((c) => c.ms);
    const failures: string[] = [];
    if (bQueries.length < bRounds) failures.push(`only ${bQueries.length} of B's ${bRounds} queries ran`);
    if (bOk.length !== bQueries.length) failures.push(`${bQueries.length - bOk.length} of B's queries failed`);
    if (bMedian === null || bMedian > boundS)
      failures.push(`B's median query latency ${fmt(bMedian)} is over the bound ${boundS.toFixed(2)} s`);
    const apiErrors = apiCalls.filter((c) => c.status !== 200);
    // Whether A's burst still had queries waiting when B's last query ended (else B partly met an idle engine).
    const lastB = bQueries[bQueries.length - 1];
    const overlapped = bQueries.every((q) => (q.a_waiting_or_queued_at_submit ?? 0) > 0);

    const summary = {
      date: startedAt.toISOString(),
      machine: machine(),
      vars: opts.vars,
      quick: opts.quick,
      settings: {
        heavy_sql: heavy,
        small_sql: small,
        a_burst: A_BURST,
        a_extra: A_EXTRA,
        b_rounds: bRounds,
        b_gap_ms: B_GAP_MS,
        api_probe_every_ms: PROBE_EVERY_MS,
      },
      bound_s: round(boundS),
      bound_rule: `${runningShare} (QUERY_MAX_RUNNING_PER_USER) × A's slower heavy query, run alone end to end, + 3 s`,
      idle: {
        b_queries: idleB,
        b_query_median_s: round(median(idleB.map((r) => r.seconds))),
        b_api_median_ms: round(median(idleApi), 1),
        b_api_max_ms: round(max(idleApi), 1),
        a_heavy_alone: aloneA,
      },
      a: {
        burst: tally(burst),
        burst_submit_seconds: burstSeconds,
        extra_submit_seconds: extraSeconds,
        submit_concurrency: SUBMIT_CONCURRENCY,
        extra: tally(extra),
        refusal_example: refusal ? { retry_after: refusal.retryAfter, message: refusal.message } : null,
        window_s: windowSeconds,
        succeeded_in_window: final.succeeded,
        failed_in_window: final.failed,
        running_at_end: final.running,
        queued_at_end: final.queued,
        cancelled_at_end: cancelled,
        cancel_not_needed: cancelOther,
        run_s_median_in_burst: round(median(aRunSeconds)),
        run_s_max_in_burst: round(max(aRunSeconds)),
        waiting_samples: samples,
        counts_over_time: aCounts,
        submits: [...burst, ...extra],
      },
      b: {
        queries: bQueries,
        query_median_s: round(bMedian),
        query_max_s: round(max(bSeconds)),
        api_median_ms: round(median(duringApi), 1),
        api_max_ms: round(max(duringApi), 1),
        api_calls: apiCalls.length,
        api_samples: apiCalls,
        api_errors: apiErrors,
        burst_still_waiting_at_every_submit: overlapped,
      },
      failures,
    };
    mkdirSync(join(BENCH, "results"), { recursive: true });
    writeFileSync(join(BENCH, "results/fairness.json"), JSON.stringify(summary, null, 2) + "\n");

    const pick = new Map<number, (typeof samples)[number][]>();
    for (const s of samples) pick.set(s.index, [...(pick.get(s.index) ?? []), s]);
    const lines = [
      `**dqs fairness run, ${startedAt.toISOString().replace("T", " ").slice(0, 19)} UTC.** ` +
        `${summary.machine.cpu}, ${summary.machine.cores} cores; Node ${summary.machine.node}` +
        `${opts.quick ? "; --quick" : ""}${Object.keys(opts.vars).length ? `; vars ${JSON.stringify(opts.vars)}` : ""}.`,
      "",
      "| measure | figure |",
      "| --- | --- |",
      `| A's heavy queries alone, end to end (count / rows) | ${aloneA.map((r) => r.seconds.toFixed(2)).join(" / ")} s |`,
      `| A's heavy queries during the burst, load + execute + write (median / max) | ${fmt(median(aRunSeconds))} / ${fmt(max(aRunSeconds))} |`,
      `| A: first ${A_BURST} submits accepted / 429 | ${summary.a.burst.accepted} / ${summary.a.burst.refused_429} (in ${burstSeconds.toFixed(2)} s) |`,
      `| A: ${A_EXTRA} more accepted / 429 (Retry-After) | ${summary.a.extra.accepted} / ${summary.a.extra.refused_429} (${summary.a.extra.retry_after.join(", ") || "—"} s) |`,
      `| A: succeeded in the ${windowSeconds.toFixed(0)} s window / cancelled at the end | ${final.succeeded} / ${cancelled} |`,
      `| B's small query, idle engine (median) | ${fmt(summary.idle.b_query_median_s)} |`,
      `| B's small query during A's burst (median / max, ${bQueries.length} queries, ${bOk.length} succeeded) | ${fmt(bMedian)} / ${fmt(max(bSeconds))} |`,
      `| bound on B's median (${summary.bound_rule}) | ${boundS.toFixed(2)} s |`,
      `| B's API requests, idle (median / max) | ${fmt(summary.idle.b_api_median_ms, "ms", 1)} / ${fmt(summary.idle.b_api_max_ms, "ms", 1)} |`,
      `| B's API requests during the burst (median / max, ${duringApi.length} requests, ${apiErrors.length} not 200) | ${fmt(summary.b.api_median_ms, "ms", 1)} / ${fmt(summary.b.api_max_ms, "ms", 1)} |`,
      "",
      "| B # | SQL | seconds | queue wait | A's queries run before it, counted from submit's answer–from submit (their time) | A running / queued at submit |",
      "| --- | --- | ---: | ---: | ---: | --- |",
      ...bQueries.map(
        (q) =>
          `| ${q.round} | \`${q.sql}\` | ${q.ok ? q.seconds.toFixed(2) : `FAILED ${q.seconds.toFixed(2)}`} | ` +
          `${q.queue_wait_ms === null ? "n/a" : `${(q.queue_wait_ms / 1000).toFixed(2)} s`} | ${q.a_batches_before_b_after_answer ?? "n/a"}–${q.a_batches_before_b ?? "n/a"} (${fmt(q.a_batches_before_b_s)}) | ` +
          `${q.a_running_at_submit} / ${q.a_waiting_or_queued_at_submit} |`,
      ),
      "",
      "A's waiting queries (first sample, last sample while queued, last sample; seconds from the burst's start):",
      "",
      ...[...pick].flatMap(([index, list]) =>
        [...new Set([list[0]!, list.findLast((x) => x.status === "queued") ?? list[0]!, list[list.length - 1]!])].map(
          (s) => `- A #${index + 1} at ${s.t.toFixed(1)} s: ${s.status}: ${s.message}`,
        ),
      ),
      "",
      failures.length
        ? `**FAILED**: ${failures.join("; ")}`
        : `passed: every B query succeeded; median within the bound.`,
      overlapped
        ? ""
        : `note: A had nothing waiting at some B submit (last B query ended at ${lastB ? (lastB.submitted_at_s + lastB.seconds).toFixed(1) : "?"} s).`,
    ];
    process.stdout.write(lines.join("\n") + "\n");
    log("wrote bench/results/fairness.json");
    process.exitCode = failures.length ? 1 : 0;
  } catch (error) {
    log(`the run stopped early: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    if (server) log(`wrangler output (tail):\n${server.output().slice(-3000)}`);
    process.exitCode = 1;
  } finally {
    if (server) {
      writeFileSync(join(BENCH, "data/fairness-wrangler-dev.log"), server.output());
      await server.stop();
    }
    clearTimeout(overTime);
  }
}

await main();
