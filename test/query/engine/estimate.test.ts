import { describe, expect, it } from "vitest";
import {
  COUNT_EVERY_STEPS,
  estimateWork,
  SAMPLE_ROWS,
  type SampleRows,
} from "../../../src/worker/query/engine/estimate";
import { createTable, type TableToLoad } from "../../../src/worker/query/engine/load-table";
import { sqliteInstanceFor } from "../../../src/worker/query/sqlite";
import { guardStatements } from "../../../src/worker/query/sqlite-guard";
import { quoteIdentifier, tableLayout } from "../../../src/worker/query/table-layout";
import { MAX_VALUE_BYTES } from "../../../src/worker/query/engine/run-guard";

// The estimate runs a statement on samples of its tables and extrapolates the steps it counts to the tables'
// full sizes. Here it is compared with the steps the same statement takes on the full tables in sql.js.

const ROWS = 200_000;
const TABLE: TableToLoad = {
  name: "t0",
  layout: tableLayout({
    SchemaVersion: "1.0",
    TableDefinition: {
      Columns: [
        { Name: "id", DataType: { DataType: "INTEGER", DataTypeOptions: { Nullable: true } } },
        { Name: "grp", DataType: { DataType: "INTEGER", DataTypeOptions: { Nullable: true } } },
        { Name: "amount", DataType: { DataType: "DOUBLE", DataTypeOptions: { Nullable: true } } },
      ],
    },
    DataSpecification: { FormatType: "CSV", DeliveryType: "RAW", DataOptions: { Header: true, Delimiter: "," } },
  }),
  columns: null,
};
const FULL: SampleRows = Array.from({ length: ROWS }, (_, i) => [i + 1, i % 20, (i * 7919) % 1000]);

/** A seeded uniform random number in [0, 1) (mulberry32), so every run draws the same samples. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uniform sample without repetition, as a store's would be (its rows in random order; seeded). */
function sampleOf(rows: SampleRows, count: number, seed = 20261128): SampleRows {
  const random = seeded(seed);
  const copy = rows.slice();
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, count);
}

/** The statement's steps on the full table, counted as the estimate counts them. */
async function actualSteps(sql: string, rows: SampleRows): Promise<number> {
  const instance = await sqliteInstanceFor(256 * 1024 * 1024);
  const db = new instance.sql.Database();
  let steps = 0;
  const unguard = guardStatements(instance, db, {
    maxValueBytes: MAX_VALUE_BYTES,
    everySteps: COUNT_EVERY_STEPS,
    onProgress: () => ((steps += COUNT_EVERY_STEPS), false),
  });
  try {
    createTable(db, TABLE);
    db.run("BEGIN");
    const insert = db.prepare(`INSERT INTO ${quoteIdentifier("t0")} VALUES (?, ?, ?)`);
    for (const row of rows) insert.run(row as number[]);
    insert.free();
    db.run("COMMIT");
    steps = 0;
    const statement = db.prepare(sql);
    while (statement.step());
    statement.free();
    return steps;
  } finally {
    unguard();
    db.close();
  }
}

async function estimated(sql: string, rows = ROWS, seed?: number) {
  const instance = await sqliteInstanceFor(256 * 1024 * 1024);
  return estimateWork(instance, [TABLE], [rows], [sampleOf(FULL.slice(0, rows), SAMPLE_ROWS, seed)], {
    sql,
    values: [],
  });
}

/** Five samples' worth: a sample is random, so the estimate is judged over several, as a run meets one of them. */
const SEEDS = [1, 2, 3, 4, 20261128];

describe("estimating a statement's work from samples", () => {
  for (const [shape, sql] of [
    ["a scan with an aggregate", "SELECT grp, sum(amount) FROM t0 GROUP BY grp"],
    ["a sort of every row", "SELECT id FROM t0 ORDER BY amount, id"],
    ["a self-join on a key with many matches", "SELECT count(*) FROM t0 a JOIN t0 b ON a.grp = b.grp WHERE a.id < 400"],
    [
      "a self-join of a few rows on a key",
      "SELECT count(*) FROM t0 a JOIN t0 b ON a.amount = b.amount WHERE a.id % 100 = 0",
    ],
  ] as const)
    it(`should come within a factor of two of the full run for ${shape}, in the median of five samples`, async () => {
      const actual = await actualSteps(sql, FULL);
      const ratios: number[] = [];
      for (const seed of SEEDS) {
        const estimate = await estimated(sql, ROWS, seed);
        expect(estimate).not.toBeNull();
        expect(estimate!.exact).toBe(false);
        ratios.push(estimate!.steps / actual);
      }
      ratios.sort((a, b) => a - b);

      expect(ratios[2]).toBeGreaterThan(0.5);
      expect(ratios[2]).toBeLessThan(2);
      // A selective filter leaves few of its rows in a small sample: one sample may miss by more, never by 5 times.
      expect(ratios[0]).toBeGreaterThan(0.2);
      expect(ratios[4]).toBeLessThan(5);
    });

  it("should count the whole run, exactly, for a table small enough to sample whole", async () => {
    const sql = "SELECT grp, count(*) FROM t0 GROUP BY grp";
    const estimate = await estimated(sql, 1000);

    expect(estimate).toMatchObject({ exact: true });
    expect(estimate!.steps).toBe(await actualSteps(sql, FULL.slice(0, 1000)));
  });

  it("should see a join without a key grow with the square of the rows, past what one sample run may do", async () => {
    // 1.6 × 10^9 row pairs: a sample of 8,192 rows already passes a run's budget, which bounds the growth.
    const estimate = await estimated("SELECT count(*) FROM t0 a JOIN t0 b ON a.amount < b.amount + a.grp");

    expect(estimate!.steps).toBeGreaterThan(1e10);
  });

  it("should stop between sample runs when asked to (the quick lane's share spent), after the runs before", async () => {
    const instance = await sqliteInstanceFor(256 * 1024 * 1024);
    let asked = 0;
    const spent = new Error("the query needs more than 500 ms of work");

    const stopped = estimateWork(
      instance,
      [TABLE],
      [ROWS],
      [sampleOf(FULL, SAMPLE_ROWS)],
      { sql: "SELECT grp, sum(amount) FROM t0 GROUP BY grp", values: [] },
      () => (++asked === 3 ? spent : null),
    );

    await expect(stopped).rejects.toBe(spent);
    expect(asked).toBe(3);
  });

  it("should stop inside a long sample run when asked to, at once", async () => {
    const instance = await sqliteInstanceFor(256 * 1024 * 1024);
    const spent = new Error("the query needs more than 500 ms of work");
    let asked = 0;

    const stopped = estimateWork(
      instance,
      [TABLE],
      [ROWS],
      [sampleOf(FULL, SAMPLE_ROWS)],
      // Without a key every sample run reaches its budget of work: asked within the first run that is long.
      { sql: "SELECT count(*) FROM t0 a JOIN t0 b ON a.amount <> b.amount", values: [] },
      () => (++asked > 5 ? spent : null),
    );

    await expect(stopped).rejects.toBe(spent);
    expect(asked).toBe(6);
  });

  it("should give no estimate when a table has rows but no sample", async () => {
    const instance = await sqliteInstanceFor(256 * 1024 * 1024);

    expect(await estimateWork(instance, [TABLE], [ROWS], [[]], { sql: "SELECT * FROM t0", values: [] })).toBeNull();
  });
});
