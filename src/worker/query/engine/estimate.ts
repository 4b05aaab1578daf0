import type { Database, Statement } from "sql.js";
import type { BoundValue } from "../sql/parameters";
import type { SqliteInstance } from "../sqlite";
import { guardStatements } from "../sqlite-guard";
import { quoteIdentifier } from "../table-layout";
import { createTable, type TableToLoad } from "./load-table";
import { MAX_VALUE_BYTES } from "./run-guard";
import { extrapolateWork } from "./work-fit";

/** Rows of one sample, in the columns createTable makes for the table (all NULL where it makes none). */
export type SampleRows = unknown[][];

/** The most rows sampled of one table: enough for a join's matches to show, little to fetch and insert. */
export const SAMPLE_ROWS = 8192;
/** Each run on a sample stops after this much work (about 0.1–0.3 s of sql.js): an estimate stays cheap. */
const STEPS_PER_SAMPLE_RUN = 30_000_000;
/** Samples grow by this factor from one run to the next; the fit compares the last two that ended. */
const GROWTH = 4;
const RUNS = 5;
/** The fewest rows of the largest table a fit starts from: below that, fixed costs hide how work grows. */
const MIN_FIT_ROWS = 64;
/** How work may grow with the rows at most in the fit (six tables joined without keys). */
const MAX_EXPONENT = 6;
/** Steps are counted this finely on samples, where a whole run may take a few thousand and the fit needs them close. */
export const COUNT_EVERY_STEPS = 100;
/** How often within a sample run the caller is asked whether to stop (a clock reading: not every count). */
const STOP_CHECK_STEPS = 1_000_000;

/** What a run's work would be at the tables' full sizes, in SQLite virtual-machine steps. */
export type WorkEstimate =
  | { steps: number; exact: boolean; sampledRows: number }
  /** Even the smallest sample ran past its work limit: at least `steps`. */
  | { steps: number; exact: false; sampledRows: number; atLeast: true };

/**
 * Estimates a statement's work on its full tables without running it there:
 * it runs the statement in sql.js on samples of the tables, each the same
 * fraction of its table, at growing fractions, counting steps, fits how the
 * steps grow with the rows (work-fit.ts; with two runs only, a power law
 * through them), and reads the fit at the full size. A run stopped at its
 * budget bounds the growth from below. Tables small enough to sample
 * whole make the answer exact. Null when a sample run fails (a value of the
 * sample SQLite refuses, say): the query is let through.
 */
export async function estimateWork(
  instance: SqliteInstance,
  tables: TableToLoad[],
  rowCounts: number[],
  samples: SampleRows[],
  statement: { sql: string; values: BoundValue[] },
  /** Asked between sample runs and within them: an error to stop with (the quick lane's share spent), or null. */
  stopBetweenRuns: () => Error | null = () => null,
): Promise<WorkEstimate | null> {
  // A table with rows but no sample (a store not built yet, say) leaves nothing to extrapolate from.
  if (rowCounts.some((rows, i) => rows > 0 && samples[i]!.length === 0)) return null;
  // The largest fraction every table's sample can fill.
  const top = Math.min(1, ...rowCounts.map((rows, i) => (rows === 0 ? 1 : samples[i]!.length / rows)));
  const largest = Math.max(1, ...rowCounts);
  const fractions = Array.from({ length: RUNS }, (_, i) => top / GROWTH ** (RUNS - 1 - i)).filter(
    (fraction, i, all) => fraction * largest >= MIN_FIT_ROWS || i === all.length - 1,
  );
  const ended: { fraction: number; steps: number }[] = [];
  let overAt: number | null = null;
  for (const fraction of fractions) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    const stop = stopBetweenRuns();
    if (stop) throw stop;
    const counts = rowCounts.map((rows) => Math.min(rows, Math.max(1, Math.round(fraction * rows))));
    const steps = runOnSample(instance, tables, samples, counts, statement, stopBetweenRuns);
    if (typeof steps === "object") throw steps;
    if (steps === "failed") return null;
    if (steps === "over") {
      overAt = fraction;
      break;
    }
    ended.push({ fraction, steps });
  }
  const sampledRows = samples.reduce((sum, rows) => sum + rows.length, 0);
  const last = ended.at(-1);
  if (!last) {
    // The smallest sample already did more than a run's budget: the full tables do at least that much per share.
    const smallest = fractions[0]!;
    return { steps: STEPS_PER_SAMPLE_RUN / Math.min(1, smallest), exact: false, sampledRows, atLeast: true };
  }
  if (last.fraction >= 1) return { steps: last.steps, exact: true, sampledRows };
  const before = ended.at(-2);
  const growth = (from: { fraction: number; steps: number }, to: { fraction: number; steps: number }) =>
    Math.log(Math.max(to.steps, 1) / Math.max(from.steps, 1)) / Math.log(to.fraction / from.fraction);
  const fitted = before ? growth(before, last) : null;
  // A run stopped at its budget grew at least this fast from the last one that ended.
  const atLeast = overAt === null ? null : growth(last, { fraction: overAt, steps: STEPS_PER_SAMPLE_RUN });
  const extrapolated = (exponent: number) => last.steps * (1 / last.fraction) ** Math.min(MAX_EXPONENT, exponent);
  const fit = extrapolateWork(
    ended.map((point) => ({ rows: point.fraction * largest, steps: point.steps })),
    largest,
  );
  // Without a fit, a power law through the last two runs; without those, work is taken to grow with the rows.
  const steps = fit ?? extrapolated(Math.max(0, fitted ?? atLeast ?? 1));
  return { steps: Math.max(steps, atLeast === null ? 0 : extrapolated(atLeast)), exact: false, sampledRows };
}

/** Fills the tables with the first `counts` rows of their samples and steps the statement through, counting. */
function runOnSample(
  instance: SqliteInstance,
  tables: TableToLoad[],
  samples: SampleRows[],
  counts: number[],
  statement: { sql: string; values: BoundValue[] },
  stop: () => Error | null,
): number | "over" | "failed" | Error {
  const db: Database = new instance.sql.Database();
  let steps = 0;
  let stopped: Error | null = null;
  const unguard = guardStatements(instance, db, {
    maxValueBytes: MAX_VALUE_BYTES,
    everySteps: COUNT_EVERY_STEPS,
    onProgress: () => {
      steps += COUNT_EVERY_STEPS;
      if (steps % STOP_CHECK_STEPS === 0) stopped ??= stop();
      return stopped !== null || steps > STEPS_PER_SAMPLE_RUN;
    },
  });
  let prepared: Statement | null = null;
  try {
    db.run("BEGIN");
    tables.forEach((table, i) => {
      const { positions } = createTable(db, table);
      const width = Math.max(positions.length, 1);
      const insert = db.prepare(
        `INSERT INTO ${quoteIdentifier(table.name)} VALUES (${Array.from({ length: width }, () => "?").join(", ")})`,
      );
      try {
        for (const row of samples[i]!.slice(0, counts[i])) insert.run(row as (string | number | null)[]);
      } finally {
        insert.free();
      }
    });
    db.run("COMMIT");
    db.run("PRAGMA query_only = 1");
    steps = 0;
    prepared = db.prepare(statement.sql);
    if (statement.values.length > 0) prepared.bind(statement.values);
    while (prepared.step()) {
      if (stopped) return stopped;
      if (steps > STEPS_PER_SAMPLE_RUN) return "over";
    }
    return stopped ?? steps;
  } catch {
    return stopped ?? (steps > STEPS_PER_SAMPLE_RUN ? "over" : "failed");
  } finally {
    prepared?.free();
    unguard();
    db.close();
  }
}
