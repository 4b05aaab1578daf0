import type { Database } from "sql.js";
import type { QueryLimits } from "../../config";
import type { SqliteInstance } from "../sqlite";
import { limitStops, LongWork, Stop } from "../run-limits";

/** How the runner learns it should stop, and tells what it is doing. */
export interface RunControl {
  cancelled(): Promise<boolean>;
  progress(message: string): Promise<void>;
  /** Says the run waits (or, done waiting, runs), and that it needs `forMs` more before the watchdog fails it. */
  wait(message: string, forMs: number): Promise<void>;
}

export interface RunStats {
  bytesLoaded: number;
  peakMemoryBytes: number;
  loadMs: number;
  executeMs: number;
  writeMs: number;
}

const CANCEL_CHECK_MS = 1000;
/**
 * Inside a statement a deployed Worker's clock stands still, so time is also
 * counted as SQLite virtual-machine steps: a query has run at least
 * steps / VM_STEPS_PER_SECOND seconds. The rate is above the fastest
 * shape measured here (15–110 M steps/s: bench/README.md), so the count
 * never stops a query before its time; the memory is looked at every
 * `PROGRESS_EVERY_STEPS`.
 */
export const VM_STEPS_PER_SECOND = 160_000_000;
export const PROGRESS_EVERY_STEPS = 10_000;
/** A common rate (bench/README.md), for how often to do things "about every second" of work. */
const TYPICAL_STEPS_PER_SECOND = 60_000_000;
/** Between rows, give other requests a turn after this much work (about 0.1 s), whatever the row count. */
const YIELD_EVERY_STEPS = TYPICAL_STEPS_PER_SECOND / 10;
const CANCEL_CHECK_STEPS = TYPICAL_STEPS_PER_SECOND;
/** The longest value (string, blob, row) a query may make: room for the longest CSV row in UTF-8, four times over. */
export const MAX_VALUE_BYTES = 32 << 20;

/**
 * One run's limits as they are spent: time (the clock, and virtual-machine
 * steps counted inside statements), memory (the WebAssembly heap plus the
 * database's pages and attached images), cancellation, and a turn for other
 * requests between rows. Each limit ends the run with a Stop naming it.
 */
export class RunGuard {
  /** Work done so far, in virtual-machine steps, counted by the progress handler. */
  steps = 0;
  /** Bytes of attached column images (outside the WebAssembly heap). */
  imageBytes = 0;
  /** What the run is doing, for a time limit reached inside a statement: " while loading" until the data is in. */
  during = " while loading";
  /** When the run started, by its clock. */
  readonly startedAt: number;
  private readonly deadline: number;
  private readonly stepBudget: number;
  /** In the quick lane: when its share ends, by the clock and by the work counted at a common rate. */
  private readonly quickLane: { deadline: number; steps: number } | null;
  private stepsAtYield = 0;
  private stepsAtCancelCheck = 0;
  private lastCancelCheck: number;
  /** Memory outside the WebAssembly heap (database pages and images), as last measured. */
  private fileBytes = 0;
  /** Why the progress handler interrupted the statement. */
  private interruption: Stop | LongWork | null = null;

  constructor(
    private readonly instance: SqliteInstance,
    readonly limits: QueryLimits,
    readonly clock: () => number,
    private readonly control: RunControl,
    readonly stats: RunStats,
  ) {
    const started = clock();
    this.startedAt = started;
    this.deadline = started + limits.timeLimitMs;
    this.lastCancelCheck = started;
    this.stepBudget = (limits.timeLimitMs / 1000) * VM_STEPS_PER_SECOND;
    this.quickLane = limits.quickLaneMs
      ? { deadline: started + limits.quickLaneMs, steps: (limits.quickLaneMs / 1000) * TYPICAL_STEPS_PER_SECOND }
      : null;
  }

  /** In the quick lane, once the run has had its share: the query is to move to the long lane. */
  pastQuickLane(): LongWork | null {
    const lane = this.quickLane;
    if (!lane || (this.steps <= lane.steps && this.clock() <= lane.deadline)) return null;
    return new LongWork(`the query needs more than ${this.limits.quickLaneMs} ms of work`);
  }

  overTimeLimit(during = ""): Stop {
    return limitStops.time(this.limits, during);
  }

  overLoadLimit(): Stop {
    return limitStops.load(this.limits);
  }

  overBudget(bytes: number): Stop {
    return new Stop(
      `Failed: the query needs more than the memory budget of ${this.limits.memoryBudgetBytes} bytes (QUERY_MEMORY_BUDGET_BYTES; it held ${bytes}). Select fewer columns or rows.`,
    );
  }

  /** True once the time is up, by the clock or by the work counted. */
  timeIsUp(): boolean {
    return this.steps > this.stepBudget || this.clock() > this.deadline;
  }

  /** Throws when `extraBytes` more (images about to be fetched, say) would not fit the budget. */
  expectRoom(db: Database, extraBytes: number): void {
    const expected = this.instance.heapBytes() + databaseFileBytes(db) + this.imageBytes + extraBytes;
    if (expected > this.limits.memoryBudgetBytes) throw this.overBudget(expected);
  }

  /** True when `extraBytes` more would fit the budget. */
  hasRoom(db: Database, extraBytes: number): boolean {
    return this.instance.heapBytes() + databaseFileBytes(db) + extraBytes <= this.limits.memoryBudgetBytes;
  }

  /** Measures what the run holds now; throws past the budget. */
  measure(db: Database | null): void {
    this.fileBytes = databaseFileBytes(db) + this.imageBytes;
    const held = this.instance.heapBytes() + this.fileBytes;
    this.record(held);
    if (held > this.limits.memoryBudgetBytes) throw this.overBudget(held);
  }

  /** Inside a statement, every PROGRESS_EVERY_STEPS steps: true stops it. Synchronous: it may not call SQLite. */
  readonly onProgress = (): boolean => {
    this.steps += PROGRESS_EVERY_STEPS;
    // The clock moves here under `wrangler dev` (and after I/O when deployed); the steps count either way.
    if (this.timeIsUp()) this.interruption = this.overTimeLimit(this.during);
    this.interruption ??= this.pastQuickLane();
    const held = this.instance.heapBytes() + this.fileBytes;
    this.record(held);
    if (held > this.limits.memoryBudgetBytes) this.interruption ??= this.overBudget(held);
    return this.interruption !== null;
  };

  /** Between rows: the limits, cancellation, and a turn for other requests, all by work done. */
  async checkpoint(db: Database, force: boolean): Promise<void> {
    if (!force && this.steps - this.stepsAtYield < YIELD_EVERY_STEPS) return;
    this.stepsAtYield = this.steps;
    const now = this.clock();
    if (now > this.deadline || this.steps > this.stepBudget) throw this.overTimeLimit();
    const moved = this.pastQuickLane();
    if (moved) throw moved;
    if (now - this.lastCancelCheck >= CANCEL_CHECK_MS || this.steps - this.stepsAtCancelCheck >= CANCEL_CHECK_STEPS) {
      this.lastCancelCheck = now;
      this.stepsAtCancelCheck = this.steps;
      if (await this.control.cancelled()) throw limitStops.cancelled();
    }
    this.measure(db);
    // Give other requests of this isolate (and the clock) a turn.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }

  /** The limit behind an error of SQLite's: the interruption, or an allocation or value refused at its limit. */
  limitReached(error: unknown): Stop | LongWork | null {
    if (this.interruption) return this.interruption;
    const message = error instanceof Error ? error.message : String(error);
    if (/^out of memory$/i.test(message)) return this.overBudget(this.instance.heapBytes() + this.fileBytes);
    if (/^string or blob too big$/i.test(message))
      return new Stop(
        `Failed: the query makes a value or row longer than the limit of ${MAX_VALUE_BYTES} bytes (the longest value a query may make). Select shorter values.`,
      );
    return null;
  }

  /** Runs a sql.js call; SQLite's own errors (at prepare or at a step) fail the query with SQLite's message. */
  stopOnSqliteError<T>(run: () => T): T {
    try {
      return run();
    } catch (error) {
      throw this.limitReached(error) ?? new Stop(`Failed: ${error instanceof Error ? error.message : String(error)}.`);
    }
  }

  private record(held: number): void {
    this.stats.peakMemoryBytes = Math.max(this.stats.peakMemoryBytes, held);
  }
}

/** Bytes of the database's pages, which sql.js keeps in its in-memory file system, outside the WebAssembly heap. */
export function databaseFileBytes(db: Database | null): number {
  if (!db) return 0;
  const result = db.exec("PRAGMA page_count; PRAGMA page_size");
  const pages = Number(result[0]?.values[0]?.[0] ?? 0);
  const size = Number(result[1]?.values[0]?.[0] ?? 0);
  return pages * size;
}
