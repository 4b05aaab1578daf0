import { describe, expect, it } from "vitest";
import { MAX_VALUE_BYTES } from "../../../src/worker/query/engine/evaluate-sql";
import { sqliteInstance } from "../../../src/worker/query/sqlite";
import { guardStatements } from "../../../src/worker/query/sqlite-guard";
import { runEngine, type MemoryItem } from "../../support/engine";

const NUMBERS: MemoryItem = {
  columns: [
    ["n", "INTEGER"],
    ["label", "STRING"],
  ],
  data: "n,label\n1,one\n2,two\n3,three\n",
};

/** A clock that never moves, as a deployed Worker's inside synchronous code: only counted work can stop a statement. */
const frozenClock = () => 1_000_000;

/** A normal query that must still answer right after whatever ran before it in this isolate. */
async function expectHealthyEngine() {
  const run = await runEngine("SELECT sum(n) AS total, count(*) AS rows FROM a.b.numbers", { "a.b.numbers": NUMBERS });
  expect(run.outcome.ok || run.outcome.message).toBe(true);
  expect(run.csv).toBe("total,rows\n6,3\n");
}

describe("guardStatements", () => {
  it("should call the progress handler inside a statement and interrupt it when the handler says so", async () => {
    const instance = await sqliteInstance();
    const db = new instance.sql.Database();
    let calls = 0;
    const unguard = guardStatements(instance, db, {
      maxValueBytes: MAX_VALUE_BYTES,
      everySteps: 1000,
      onProgress: () => ++calls >= 20,
    });
    try {
      expect(() =>
        db.exec(
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000000) SELECT count(*) FROM c",
        ),
      ).toThrow("interrupted");
      expect(calls).toBe(20);
    } finally {
      unguard();
      db.close();
    }
  });

  it("should refuse values longer than maxValueBytes", async () => {
    const instance = await sqliteInstance();
    const db = new instance.sql.Database();
    const unguard = guardStatements(instance, db, { maxValueBytes: 1000, everySteps: 1000, onProgress: () => false });
    try {
      expect(db.exec("SELECT length(hex(zeroblob(400)))")).toEqual([
        { columns: ["length(hex(zeroblob(400)))"], values: [[800]] },
      ]);
      expect(() => db.exec("SELECT length(hex(zeroblob(600)))")).toThrow("string or blob too big");
    } finally {
      unguard();
      db.close();
    }
  });

  it("should refuse a connection whose struct it does not recognise instead of writing into it", async () => {
    const instance = await sqliteInstance();
    const db = new instance.sql.Database();
    const unguard = guardStatements(instance, db, { maxValueBytes: 1000, everySteps: 1000, onProgress: () => false });
    try {
      // Guarded once, the fields no longer hold a fresh connection's values.
      expect(() =>
        guardStatements(instance, db, { maxValueBytes: 1000, everySteps: 1000, onProgress: () => false }),
      ).toThrow(/not laid out as dqs expects/);
    } finally {
      unguard();
      db.close();
    }
  });
});

describe("evaluateSql limits inside a statement", () => {
  it("should stop a statement that yields no row at a 2 s time limit by counting work, with the clock frozen", async () => {
    const run = await runEngine(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 80000000) SELECT count(*) FROM c",
      {},
      { limits: { timeLimitMs: 2000 }, clock: frozenClock },
    );

    expect(run.outcome.ok || run.outcome.message).toBe(
      "Failed: the query ran longer than the time limit of 2 s (QUERY_TIME_LIMIT_SECONDS).",
    );
    expect(run.target.state).toBe("aborted");
    await expectHealthyEngine();
  }, 60_000);

  it("should stop a per-row-expensive query that yields no row by counting work, with the clock frozen", async () => {
    const run = await runEngine(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000) " +
        "SELECT x FROM c WHERE (SELECT count(*) FROM c AS d WHERE d.x % 7 = c.x % 5) < 0",
      {},
      { limits: { timeLimitMs: 1000 }, clock: frozenClock },
    );

    expect(run.outcome.ok || run.outcome.message).toBe(
      "Failed: the query ran longer than the time limit of 1 s (QUERY_TIME_LIMIT_SECONDS).",
    );
  }, 60_000);

  it("should fail length(hex(zeroblob(32000000))) naming a limit, and leave the isolate healthy", async () => {
    const run = await runEngine("SELECT length(hex(zeroblob(32000000)))", {});

    expect(run.outcome.ok || run.outcome.message).toMatch(
      /QUERY_MEMORY_BUDGET_BYTES|limit of 33554432 bytes \(the longest value a query may make\)/,
    );
    await expectHealthyEngine();
    expect((await sqliteInstance()).heapBytes()).toBeLessThan(100_663_296 / 2);
  });

  it("should fail a string that doubles past the limits, naming one, and leave the isolate healthy", async () => {
    const run = await runEngine("SELECT length(replace(hex(zeroblob(1e8)), '0', '00'))", {});

    expect(run.outcome.ok || run.outcome.message).toMatch(
      /QUERY_MEMORY_BUDGET_BYTES|limit of 33554432 bytes \(the longest value a query may make\)/,
    );
    await expectHealthyEngine();
  });

  it("should stop SQLite's own allocations at the memory budget inside one statement", async () => {
    // The result stays under the length limit; growing it outgrows a 40 MiB budget inside one aggregate step.
    const run = await runEngine(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 8) " +
        "SELECT length(group_concat(hex(zeroblob(2000000)), '')) FROM c",
      {},
      { limits: { memoryBudgetBytes: 40 << 20 }, clock: frozenClock },
    );

    expect(run.outcome.ok || run.outcome.message).toMatch(
      /^Failed: the query needs more than the memory budget of 41943040 bytes \(QUERY_MEMORY_BUDGET_BYTES; it held \d+\)\./,
    );
    await expectHealthyEngine();
  });

  it("should start the next query on a fresh SQLite instance when one grew the heap by more than a quarter of the budget", async () => {
    const before = await sqliteInstance();
    const run = await runEngine(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 6) " +
        "SELECT length(group_concat(hex(zeroblob(2000000)), '')) AS n FROM c",
      {},
    );
    expect(run.outcome.ok || run.outcome.message).toBe(true);
    expect(before.heapBytes() - before.initialHeapBytes).toBeGreaterThan(100_663_296 / 4);

    const after = await sqliteInstance();

    expect(after).not.toBe(before);
    expect(after.heapBytes()).toBeLessThan(before.heapBytes());
    await expectHealthyEngine();
  });

  it("should keep the SQLite instance after a small query", async () => {
    await expectHealthyEngine();
    const before = await sqliteInstance();

    await expectHealthyEngine();

    expect(await sqliteInstance()).toBe(before);
  });

  it("should keep SQLite's heap limit at the budget for the next query of the instance", async () => {
    await runEngine("SELECT count(*) FROM a.b.numbers", { "a.b.numbers": NUMBERS });
    const instance = await sqliteInstance();
    const db = new instance.sql.Database();
    try {
      expect(db.exec("PRAGMA hard_heap_limit")[0]?.values).toEqual([[100_663_296]]);
    } finally {
      db.close();
    }
  });

  it("should run a query with another budget on an instance of its own, limited to that budget", async () => {
    const before = await sqliteInstance();
    await runEngine("SELECT 1", {}, { limits: { memoryBudgetBytes: 50_000_000 } });
    const other = await sqliteInstance();
    const db = new other.sql.Database();
    try {
      expect(other).not.toBe(before);
      expect(db.exec("PRAGMA hard_heap_limit")[0]?.values).toEqual([[50_000_000]]);
    } finally {
      db.close();
    }
  });
});
