import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { evaluateSql } from "../../../src/worker/query/engine/evaluate-sql";
import type { QueryLimits } from "../../../src/worker/config";
import { TransientError } from "../../../src/worker/query/run-limits";
import { tableStoreStub } from "../../../src/worker/query/store/store-state";
import type { StoreQuery, StoreQueryOutcome } from "../../../src/worker/query/store/table-store";
import { tableLayout } from "../../../src/worker/query/table-layout";
import { randomToken } from "../../../src/worker/util/crypto";
import {
  limitsWith,
  MemoryControl,
  MemorySource,
  MemoryTarget,
  runEngine,
  storedSchema,
  UnsampledSource,
  type MemoryItem,
} from "../../support/engine";
import { stateOf } from "../../support/query";

// Every limit of a query holds when it runs in a table store, each failing
// the query with a message that names its setting; cancelling stops it, and
// a store that stops mid-query fails it (or, for a passing storage fault,
// has it retried) instead of leaving it stuck.

const ROWS = 3000;
const BIG: MemoryItem = {
  columns: [
    ["n", "INTEGER"],
    ["label", "STRING"],
  ],
  data: "n,label\n" + Array.from({ length: ROWS }, (_, i) => `${i + 1},label number ${i + 1}`).join("\n") + "\n",
};
const SMALL: MemoryItem = {
  columns: [
    ["k", "INTEGER"],
    ["note", "STRING"],
  ],
  data: "k,note\n" + Array.from({ length: 2000 }, (_, i) => `${i + 1},note ${i + 1}`).join("\n") + "\n",
};
const ITEMS: Record<string, MemoryItem> = { "a.d.big": BIG, "a.d.small": SMALL };

/** Many rows, produced in the store itself: a recursive CTE joined with one row of the host item. */
// Its length comes from the data: on the engine's check (one row of NULLs, see runInStore) it ends at once.
const ENDLESS =
  "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 100000000 AND x < (SELECT max(n) FROM a.d.big) * 100000) SELECT x, label FROM r JOIN a.d.big ON n = 1";

function storeRun(sql: string, limits: Partial<QueryLimits> = {}, Source = MemorySource) {
  const source = new Source(ITEMS, "store");
  return runEngine(sql, ITEMS, { mode: "store", source, limits }).then((run) => ({ ...run, source }));
}

function messageOf(outcome: { ok: boolean; message?: string }): string | null {
  return outcome.ok ? null : (outcome.message ?? null);
}

describe("limits in a table store", () => {
  it("should refuse before it starts a query estimated to run past QUERY_TIME_LIMIT_SECONDS", async () => {
    const run = await storeRun(ENDLESS, { timeLimitMs: 500 });

    expect(run.outcome).toMatchObject({ engine: "store", ok: false, cancelled: false });
    expect(messageOf(run.outcome)).toMatch(
      /^Failed: the query would run (about|at least) [\d.,]+ s in the table store of a\.d\.big \(estimated from \d+ sampled rows\), past the time limit of 0\.5 s \(QUERY_TIME_LIMIT_SECONDS\), so it was not started\./,
    );
    expect(run.source.opened).toEqual([]);
    expect(run.csv).toBe("");
  });

  it("should stop a query the estimate let through once it produces rows past QUERY_TIME_LIMIT_SECONDS, and write no result", async () => {
    const started = Date.now();

    const run = await storeRun(ENDLESS, { timeLimitMs: 500 }, UnsampledSource);

    expect(run.outcome).toMatchObject({ engine: "store", ok: false, cancelled: false });
    expect(messageOf(run.outcome)).toBe(
      "Failed: the query ran longer than the time limit of 0.5 s (QUERY_TIME_LIMIT_SECONDS).",
    );
    expect(run.source.opened).toEqual(["store:a.d.big"]);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(run.csv).toBe("");
  });

  it("should stop at QUERY_MAX_RESULT_ROWS, and allow a result of exactly that many rows", async () => {
    const over = await storeRun("SELECT n FROM a.d.big WHERE n <= 6", { maxResultRows: 5 });
    const exact = await storeRun("SELECT n FROM a.d.big WHERE n <= 5", { maxResultRows: 5 });

    expect(over.outcome.engine).toBe("store");
    expect(messageOf(over.outcome)).toBe(
      "Failed: the result has more than the limit of 5 rows (QUERY_MAX_RESULT_ROWS). Add a LIMIT or aggregate.",
    );
    expect(over.csv).toBe("");
    expect(exact.outcome).toMatchObject({ engine: "store", ok: true, rowCount: 5 });
    expect(exact.csv).toBe("n\n1\n2\n3\n4\n5\n");
  });

  it("should stop at QUERY_MAX_RESULT_BYTES, and allow a result of exactly that size", async () => {
    const sql = "SELECT n, label FROM a.d.big ORDER BY n DESC";
    const free = await storeRun(sql);
    expect(free.outcome.ok).toBe(true);
    const size = new TextEncoder().encode(free.csv).byteLength;

    const exact = await storeRun(sql, { maxResultBytes: size });
    const over = await storeRun(sql, { maxResultBytes: size - 1 });

    expect(exact.outcome).toMatchObject({ engine: "store", ok: true, size });
    expect(exact.csv).toBe(free.csv);
    expect(over.outcome.engine).toBe("store");
    expect(messageOf(over.outcome)).toBe(
      `Failed: the result is larger than the limit of ${size - 1} bytes (QUERY_MAX_RESULT_BYTES). Add a LIMIT or aggregate.`,
    );
    expect(over.csv).toBe("");
  });

  // QUERY_MAX_LOAD_BYTES bounds what sql.js holds in an isolate; a store brings items in up to TABLE_STORE_MAX_BYTES,
  // so a join of two large items works. The status still reports the bytes brought in.
  it("should report what it brings in as loaded, without holding it to QUERY_MAX_LOAD_BYTES", async () => {
    const join = "SELECT count(*) FROM a.d.big JOIN a.d.small ON k = n";
    const free = await storeRun(join);
    expect(free.csv).toBe("count(*)\n2000\n");
    const brought = free.outcome.bytesLoaded;
    expect(brought).toBeGreaterThan(0);

    const host = await storeRun("SELECT count(*), sum(n) FROM a.d.big", { maxLoadBytes: 1 });
    const under = await storeRun(join, { maxLoadBytes: 1 });

    expect(host.outcome).toMatchObject({ engine: "store", ok: true, bytesLoaded: 0 });
    expect(host.csv).toBe(`count(*),sum(n)\n${ROWS},${(ROWS * (ROWS + 1)) / 2}\n`);
    expect(under.outcome).toMatchObject({ engine: "store", ok: true, bytesLoaded: brought });
    expect(under.csv).toBe(free.csv);
  });

  it("should stop bringing an item in when the store would hold more than TABLE_STORE_MAX_BYTES", async () => {
    const run = await storeRun("SELECT count(*) FROM a.d.big JOIN a.d.small ON k = n", { maxStoreBytes: 4096 });

    expect(run.outcome.engine).toBe("store");
    expect(messageOf(run.outcome)).toBe(
      "Failed: the table store would hold more than the limit of 4096 bytes (TABLE_STORE_MAX_BYTES).",
    );
  });

  it("should stop building a store past TABLE_STORE_MAX_BYTES, and keep nothing", async () => {
    // More than one 2 MiB range of the file, so the store has grown when the guard looks before the second.
    const rows = 200_000;
    const many: MemoryItem = {
      ...BIG,
      data: "n,label\n" + Array.from({ length: rows }, (_, i) => `${i},l${i}`).join("\n"),
    };
    const { stub, source } = await storeSource(many, rows);

    const built = await stub.build(source, 64 * 1024);

    expect(built).toEqual({
      ok: false,
      message: "Failed: the table store would hold more than the limit of 65536 bytes (TABLE_STORE_MAX_BYTES).",
    });
    expect(await stub.rows()).toBeNull();
    expect(await stub.build(source, limitsWith().maxStoreBytes)).toMatchObject({ ok: true, rows });
  });

  // The size is checked before each range of the file is read (2 MiB) and again once the last rows are in.
  it("should not report as built a store that ends above TABLE_STORE_MAX_BYTES", async () => {
    const { stub, source } = await storeSource(BIG, ROWS);

    const built = await stub.build(source, 8192);

    expect(built).toEqual({
      ok: false,
      message: "Failed: the table store would hold more than the limit of 8192 bytes (TABLE_STORE_MAX_BYTES).",
    });
    expect(await stub.rows()).toBeNull();
  });
});

/** A stored copy of `item` in R2 and the (not yet built) table store for it. */
async function storeSource(item: MemoryItem, rows: number) {
  const objectKey = `test-limits/${randomToken(8)}/item.csv`;
  await env.BUCKET.put(objectKey, item.data as string);
  const source = { objectKey, layout: tableLayout(storedSchema(item)), rows, name: "item" };
  return { stub: tableStoreStub(env, objectKey), source };
}

describe("cancelling a query in a table store", () => {
  it("should stop it between rows once its QueryState says cancelled, and write no result", async () => {
    const queryId = `test-cancel-${randomToken(8)}`;
    const limits = limitsWith({ timeLimitMs: 60_000 });
    await stateOf(queryId).create({ queryId, ownerUserId: "nobody", limits });
    expect((await stateOf(queryId).cancel()).ok).toBe(true);
    const resultKey = `results/test-${randomToken(8)}.csv`;
    const started = Date.now();

    const outcome = await evaluateSql(
      { sql: ENDLESS, parameters: null },
      {
        source: new MemorySource(ITEMS, "store"),
        target: new MemoryTarget(),
        control: new MemoryControl(),
        queryId,
        resultKey,
      },
      limits,
    );

    expect(outcome).toMatchObject({ engine: "store", ok: false, cancelled: true, message: "Cancelled by its owner." });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await env.BUCKET.head(resultKey)).toBeNull();
  });
});

/** A store-mode source whose table store answers with `answer` instead of running the query. */
class FailingStore extends MemorySource {
  constructor(private readonly answer: () => Promise<StoreQueryOutcome>) {
    super(ITEMS, "store");
  }

  override queryStore(_objectKey: string, _request: StoreQuery): Promise<StoreQueryOutcome> {
    return this.answer();
  }
}

describe("a table store that stops mid-query", () => {
  it("should fail the query naming the time limit when the store went away after its time was up (it was reset)", async () => {
    const source = new FailingStore(async () => {
      await new Promise((resolve) => setTimeout(resolve, 600));
      throw new Error("Durable Object exceeded its CPU time limit and was reset.");
    });

    const run = await runEngine("SELECT count(*) FROM a.d.big", ITEMS, {
      mode: "store",
      source,
      limits: { timeLimitMs: 500 },
    });

    expect(run.outcome).toMatchObject({ engine: "store", ok: false, cancelled: false });
    expect(messageOf(run.outcome)).toBe(
      "Failed: the query ran longer than the time limit of 0.5 s (QUERY_TIME_LIMIT_SECONDS); the table store was reset.",
    );
  });

  it("should throw a TransientError, for the consumer to retry, when the store went away before the query's time was up", async () => {
    const source = new FailingStore(() =>
      Promise.reject(new Error('Worker "dqs-store" not found. Make sure it is running locally.')),
    );

    const run = runEngine("SELECT count(*) FROM a.d.big", ITEMS, {
      mode: "store",
      source,
      limits: { timeLimitMs: 7000 },
    });

    await expect(run).rejects.toThrow(TransientError);
    await expect(run).rejects.toThrow(/dqs-store/);
  });

  it("should throw a TransientError, for the consumer to retry, when the error is retryable", async () => {
    const error = Object.assign(new Error("Network connection lost."), { retryable: true });
    const source = new FailingStore(() => Promise.reject(error));

    const run = runEngine("SELECT count(*) FROM a.d.big", ITEMS, { mode: "store", source });

    await expect(run).rejects.toThrow(TransientError);
    await expect(run).rejects.toThrow(/Network connection lost/);
  });

  it("should throw a TransientError when the store answers that it cannot run the query now", async () => {
    const source = new FailingStore(async () => ({
      ok: false,
      cancelled: false,
      transient: true,
      message: "the table store is not built",
    }));

    await expect(runEngine("SELECT count(*) FROM a.d.big", ITEMS, { mode: "store", source })).rejects.toThrow(
      new TransientError("the table store is not built"),
    );
  });

  it("should pass on the store's own failure as the query's", async () => {
    const source = new FailingStore(async () => ({
      ok: false,
      cancelled: false,
      message: "Failed: the store refused it.",
    }));

    const run = await runEngine("SELECT count(*) FROM a.d.big", ITEMS, { mode: "store", source });

    expect(run.outcome).toMatchObject({
      engine: "store",
      ok: false,
      cancelled: false,
      message: "Failed: the store refused it.",
    });
  });
});
