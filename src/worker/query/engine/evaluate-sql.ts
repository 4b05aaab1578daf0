import type { Database } from "sql.js";
import type { QueryLimits } from "../../config";
import type { DataTypeName } from "../../ingest/value-types";
import type { ResultColumn } from "../query-record";
import type { ResultTarget } from "../result/writer";
import { limitStops, LongWork, OVERRUN_OPENINGS, Stop, transient, TransientError } from "../run-limits";
import { checkReadOnly } from "../sql/read-only";
import { internalTableName } from "../sql/internal-names";
import { bindParameters, type BoundValue } from "../sql/parameters";
import {
  columnsUsed,
  HOW_ITEMS_ARE_NAMED,
  rewriteTableNames,
  writtenName,
  type DataItemReference,
} from "../sql/table-names";
import { tokenize, type Token } from "../sql/tokenizer";
import { retireIfGrown, sqliteInstanceFor, type SqliteInstance } from "../sqlite";
import { guardStatements } from "../sqlite-guard";
import { compoundsForStore } from "../store/compound-terms";
import type { StoreQuery, StoreQueryOutcome } from "../store/table-store";
import type { QueryText } from "../query-text";
import { AttachedImages } from "./attach-images";
import { createSlotsTable } from "./column-images";
import { declaredColumnTypes, keptDataType } from "./declared-types";
import { estimateWork, SAMPLE_ROWS, type SampleRows } from "./estimate";
import { executeStatement, stepThrough } from "./execute-statement";
import { quoteIdentifier } from "../table-layout";
import { closest, didYouMean } from "../../util/closest";
import { createTable, loadTable, type TableToLoad } from "./load-table";
import { chooseEngine, type EngineChoice, type PlannedItem, type UsedColumns } from "./plan";
import { MAX_VALUE_BYTES, PROGRESS_EVERY_STEPS, RunGuard, type RunControl, type RunStats } from "./run-guard";

export type { ResultTarget } from "../result/writer";
export { MAX_VALUE_BYTES, VM_STEPS_PER_SECOND, type RunControl, type RunStats } from "./run-guard";

/** A data item the engine may read: where its bytes are, catalog figures, its column images and its table store. */
export interface LoadableItem extends PlannedItem {
  objectKey: string;
}

/**
 * A table store's speed, for estimates: SQLite virtual-machine steps a
 * second, a little above the bench's store runs (bench/README.md,
 * "Estimates and bounded work"), and bytes of CSV a second it copies in.
 */
const STORE_STEPS_PER_SECOND = 40_000_000;
const STORE_BRING_IN_BYTES_PER_SECOND = 100_000_000;
/** sql.js's: steps a second (a common rate, run-guard.ts) and bytes of CSV a second it loads. */
const SQLJS_STEPS_PER_SECOND = 60_000_000;
const SQLJS_LOAD_BYTES_PER_SECOND = 60_000_000;

/** sql.js attaches at most this many databases to one connection (SQLite's default SQLITE_MAX_ATTACHED). */
const MAX_ATTACHED = 10;
/** How long a query waits for a table store being built, and how often it looks again (more often at first). */
const STORE_WAIT_MS = 15 * 60_000;
const STORE_POLL_MS = [250, 250, 500, 500, 1000];
const STORE_POLL_MAX_MS = 2_000;

/** Where the engine reads data items from: the catalog (with its visibility rule), storage and table stores. */
export interface QuerySource {
  /** The data item behind a three-part name, or null when it does not exist or the query's owner may not read it. */
  find(reference: DataItemReference): Promise<LoadableItem | null>;
  /**
   * Names of data items the query's owner may read, those of the reference's dataset first, at most
   * `most`: what a name that was not found is compared with. Never a name the owner may not read.
   */
  readableNames?(reference: DataItemReference, most: number): Promise<[string, string, string][]>;
  /** The stored bytes; null when the object is gone (the item was deleted meanwhile). */
  open(item: LoadableItem): Promise<ReadableStream<Uint8Array> | null>;
  /** One column image, whole; null when it is gone (the version was replaced and swept meanwhile). */
  openImage(key: string): Promise<Uint8Array | null>;
  /** Runs a query in the table store of the version stored under `objectKey`. */
  queryStore(objectKey: string, request: StoreQuery): Promise<StoreQueryOutcome>;
  /** Up to `count` rows of an item, in the columns the query uses (engine/samples.ts), to estimate its work. */
  sample(item: LoadableItem, used: ReadonlySet<string> | null, count: number): Promise<SampleRows>;
}

export type Engine = "sqljs" | "store";

export type EngineOutcome = { engine: Engine } & (
  | ({ ok: true; rowCount: number; size: number; columns: ResultColumn[] } & RunStats)
  | ({ ok: false; cancelled: boolean; message: string } & RunStats)
);

/** What one run talks to; `queryId` and `resultKey` are passed on to a table store. */
type Io = { source: QuerySource; target: ResultTarget; control: RunControl; queryId: string; resultKey: string };

/** The data items a query names, found in the catalog, in the order of its references. */
export type Resolved = {
  /** The query as its owner wrote it. */
  original: QueryText;
  sql: string;
  /** `sql` with its placeholders numbered for binding, and the values (sql/parameters.ts). */
  bound: { sql: string; values: BoundValue[] };
  references: (DataItemReference & { alias: string })[];
  items: LoadableItem[];
  tokens: Token[] | null;
  used: UsedColumns;
};

/** One run's shared parts: its limits, stats, guard and database on the empty (or loaded) tables. */
interface Run {
  io: Io;
  instance: SqliteInstance;
  limits: QueryLimits;
  clock: () => number;
  stats: RunStats;
  guard: RunGuard;
  db: Database;
  resolved: Resolved;
  tables: TableToLoad[];
  /** The result's column names, from the query as written (placeholders included). */
  names: string[];
  /** The data type each result column may keep (declared-types.ts), from the check on the empty tables. */
  declared: (DataTypeName | null)[];
}

/**
 * Runs one query in phases: resolve its data item names through `source`;
 * plan which engine runs it from catalog figures (waiting while a table
 * store it needs is built); check it is one read-only statement on the
 * empty tables; then either load the tables into sql.js and execute there,
 * or hand it to the table store. Both write through the same result writer.
 * Every limit stops it with a message naming it. The sql.js database is
 * always closed, and an instance whose heap the query grew by more than a
 * quarter of the budget is retired.
 */
export async function evaluateSql(
  query: QueryText,
  io: Io,
  limits: QueryLimits,
  clock: () => number = Date.now,
): Promise<EngineOutcome> {
  const stats: RunStats = { bytesLoaded: 0, peakMemoryBytes: 0, loadMs: 0, executeMs: 0, writeMs: 0 };
  let engine: Engine = "sqljs";
  const failed = (message: string, cancelled = false): EngineOutcome => ({
    engine,
    ok: false,
    cancelled,
    message,
    ...stats,
  });
  const resolved = await resolve(query, io.source);
  if (!resolved.ok) return failed(resolved.message);
  const planned = await plan(resolved, io, limits);
  if (!planned.ok) return failed(planned.message, planned.cancelled);
  engine = planned.choice.engine === "store" ? "store" : "sqljs";
  const instance = await sqliteInstanceFor(limits.memoryBudgetBytes);
  const guard = new RunGuard(instance, limits, clock, io.control, stats);
  const userFacing = namingAsTheUserDid(planned.resolved.references, planned.resolved.items);
  let db: Database | null = null;
  let unguard: (() => void) | null = null;
  try {
    db = new instance.sql.Database();
    unguard = guardStatements(instance, db, {
      maxValueBytes: MAX_VALUE_BYTES,
      everySteps: PROGRESS_EVERY_STEPS,
      onProgress: guard.onProgress,
    });
    const run: Run = {
      io,
      instance,
      limits,
      clock,
      stats,
      guard,
      db,
      resolved: planned.resolved,
      tables: [],
      names: [],
      declared: [],
    };
    run.tables = planned.resolved.references.map((reference, i) => ({
      name: reference.alias,
      layout: planned.resolved.items[i]!.layout,
      columns: planned.resolved.used[i]!,
    }));
    const created = run.tables.map((table) => createTable(run.db, table));
    // Checked on the empty tables, before anything is loaded: a refused query costs nothing.
    const readOnly = checkReadOnly(db, planned.resolved.sql);
    if (!readOnly.ok) return failed(userFacing(`Failed: ${readOnly.message}.`));
    run.names = guard.stopOnSqliteError(() => columnNames(run.db, planned.resolved.sql));
    const declared = declaredColumnTypes(db, planned.resolved.tokens, planned.resolved.original.parameters);
    run.declared = run.names.map((_, i) => (declared.length === run.names.length ? keptDataType(declared[i]!) : null));
    const outcome =
      planned.choice.engine === "store"
        ? await runInStore(run, planned.choice.host)
        : await runInSqlJs(run, instance, created);
    return outcome.ok ? { engine, ...outcome, ...stats } : failed(userFacing(outcome.message), outcome.cancelled);
  } catch (caught) {
    const error =
      caught instanceof TransientError || caught instanceof LongWork ? caught : (guard.limitReached(caught) ?? caught);
    if (error instanceof Stop) return failed(userFacing(error.message), error.cancelled);
    // The consumer retries the one, and moves the query to the long lane for the other.
    if (error instanceof TransientError || error instanceof LongWork) throw error;
    // SQLite's own errors (too many columns, out of memory, …) and anything unforeseen end the query for good.
    return failed(userFacing(`Failed: ${error instanceof Error ? error.message : String(error)}.`));
  } finally {
    unguard?.();
    db?.close();
    retireIfGrown(instance, limits.memoryBudgetBytes / 4);
  }
}

type PhaseOutcome =
  | { ok: true; rowCount: number; size: number; columns: ResultColumn[] }
  | { ok: false; cancelled: boolean; message: string };

/**
 * Rewrites the data item names to internal tables and finds each item (a
 * missing or unreadable one fails), then numbers the placeholders for binding.
 */
export async function resolve(
  query: QueryText,
  source: Pick<QuerySource, "find" | "readableNames">,
): Promise<({ ok: true } & Resolved) | { ok: false; message: string }> {
  const names = rewriteTableNames(query.sql);
  if (!names.ok) return { ok: false, message: `Failed: ${names.message}` };
  const items: LoadableItem[] = [];
  for (const reference of names.tables) {
    const item = await transient("reading the catalog", () => source.find(reference));
    if (!item) {
      const near = await transient("reading the catalog", () => nearbyItems(source, reference));
      return {
        ok: false,
        message: `Failed: table ${nameOf(reference)} does not exist, or you may not read it.${didYouMean(near)}`,
      };
    }
    items.push(item);
  }
  const tokens = tokenize(names.sql);
  const internal = tokens.ok ? internalTableName(tokens.tokens) : null;
  if (internal)
    return {
      ok: false,
      message: `Failed: ${internal} is not a data item; a query reads only the data items it names (account.dataset.data).`,
    };
  const tableColumns = new Map(
    names.tables.map((reference, i) => [reference.alias, items[i]!.layout.columns.map((c) => c.name)]),
  );
  const selections = tokens.ok ? columnsUsed(tokens.tokens, tableColumns) : new Map();
  // SQL the tokenizer cannot read fails on SQLite's message before anything is bound.
  const bound = tokens.ok
    ? bindParameters(tokens.tokens, query.parameters)
    : { ok: true as const, sql: names.sql, values: [] };
  if (!bound.ok) return { ok: false, message: `Failed: ${bound.message}` };
  const used = names.tables.map((reference) => {
    const selection = selections.get(reference.alias) ?? "all";
    return selection === "all" ? null : new Set([...selection].map((name: string) => name.toLowerCase()));
  });
  return {
    ok: true,
    original: query,
    sql: names.sql,
    bound: { sql: bound.sql, values: bound.values },
    references: names.tables,
    items,
    tokens: tokens.ok ? tokens.tokens : null,
    used,
  };
}

/**
 * Chooses the engine (plan.ts). While a table store the query needs is
 * being built, it waits, saying so in its status, and looks again.
 */
async function plan(
  resolved: Resolved,
  io: Io,
  limits: QueryLimits,
): Promise<
  { ok: true; resolved: Resolved; choice: EngineChoice } | { ok: false; message: string; cancelled: boolean }
> {
  const waitUntil = Date.now() + STORE_WAIT_MS;
  for (let current = resolved, polls = 0; ; polls++) {
    const choice = chooseEngine(current.items);
    if (choice.engine !== "wait") {
      if (current !== resolved) await io.control.wait("Running: the table store is ready.", limits.timeLimitMs);
      return { ok: true, resolved: current, choice };
    }
    const name = nameOf(current.references[choice.for]!);
    // Waiting holds the lane: the quick lane hands the wait to the long lane.
    if (limits.quickLaneMs) throw new LongWork(`it waits for the table store of ${name} to be built`);
    if (Date.now() > waitUntil)
      return {
        ok: false,
        cancelled: false,
        message: `Failed: the table store of ${name} was not ready after ${STORE_WAIT_MS / 60_000} minutes; submit the query again later.`,
      };
    await io.control.wait(
      `Waiting: the table store of ${name} (${current.items[choice.for]!.rows} rows) is being built; the query runs when it is ready.`,
      waitUntil - Date.now(),
    );
    await new Promise((resolve) => setTimeout(resolve, STORE_POLL_MS[polls] ?? STORE_POLL_MAX_MS));
    if (await io.control.cancelled()) return { ok: false, cancelled: true, message: "Cancelled by its owner." };
    const again = await resolve(resolved.original, io.source);
    if (!again.ok) return { ok: false, cancelled: false, message: again.message };
    current = again;
  }
}

/** How many readable names a name that was not found is compared with. */
const MOST_NAMES_COMPARED = 2000;
/** How many column names a column that was not found is compared with. */
const MOST_COLUMNS_COMPARED = 5000;

/** The readable data items closest to a name that was not found, written as a query writes them. */
async function nearbyItems(source: Pick<QuerySource, "readableNames">, reference: DataItemReference) {
  if (!source.readableNames) return [];
  const readable = await source.readableNames(reference, MOST_NAMES_COMPARED);
  const written = [reference.account, reference.dataset, reference.data];
  return closest(written, readable, (parts) => parts).map((parts) => writtenName(...parts));
}

/** A data item's three-part name, for messages. */
export function nameOf(reference: DataItemReference): string {
  return `${reference.account}.${reference.dataset}.${reference.data}`;
}

/**
 * Turns internal table names in a message back into the three-part names
 * the user wrote; SQLite's "no such table" (a name that is not three parts,
 * most often) also says how a data item is named, and its "no such column"
 * names the closest columns of the query's data items.
 */
export function namingAsTheUserDid(
  references: Resolved["references"],
  items: readonly Pick<LoadableItem, "layout">[],
): (message: string) => string {
  const names = references.map((t) => ({ alias: t.alias, name: nameOf(t) }));
  return (message) => {
    const missing = /\bno such column: (\S+?)\.?$/.exec(message)?.[1];
    const named = names.reduce(
      (text, { alias, name }) => text.replace(new RegExp(`\\b${alias}\\b`, "g"), name),
      message,
    );
    if (missing !== undefined) return named + didYouMean(nearbyColumns(missing, items));
    return /\bno such table: /.test(named) ? `${named} ${HOW_ITEMS_ARE_NAMED}` : named;
  };
}

/** The columns of the query's data items closest to one SQLite did not find (`temp`, or `w.temp`). */
function nearbyColumns(missing: string, items: readonly Pick<LoadableItem, "layout">[]): string[] {
  const column = missing.slice(missing.lastIndexOf(".") + 1);
  const columns = items.flatMap((item) => item.layout.columns.map((c) => c.name)).slice(0, MOST_COLUMNS_COMPARED);
  return closest([column], columns, (name) => [name]).map(writtenColumn);
}

/** A column name as a query writes it: bare where SQLite reads it so, else in double quotes. */
function writtenColumn(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : quoteIdentifier(name);
}

/** Loads each table into sql.js (column images attached, or CSV rows inserted), then executes there. */
async function runInSqlJs(
  run: Run,
  instance: SqliteInstance,
  created: ReturnType<typeof createTable>[],
): Promise<PhaseOutcome> {
  const { io, guard, db, clock, stats } = run;
  const images = new AttachedImages(instance, guard, (key) => io.source.openImage(key), io.control);
  let targetOpen = false;
  let executeStarted: number | null = null;
  try {
    await load(run, images, created);
    await io.control.progress("Running: executing the query.");
    executeStarted = clock();
    guard.measure(db);
    const statement = { ...run.resolved.bound, names: run.names, declared: run.declared };
    const result = await executeStatement(db, statement, io.target, guard, () => (targetOpen = true));
    stats.executeMs = clock() - executeStarted - result.writeMs;
    stats.writeMs = result.writeMs;
    return { ok: true, rowCount: result.rowCount, size: result.size, columns: result.columns };
  } catch (error) {
    // A query stopped while executing (its time limit, say) still says how long it ran.
    if (executeStarted !== null) stats.executeMs = clock() - executeStarted;
    if (targetOpen) await io.target.abort();
    throw error;
  } finally {
    images.close();
  }
}

/** Which items sql.js reads from column images (where built, as long as they fit the attach limit). */
export function fromImages(items: PlannedItem[], used: UsedColumns): boolean[] {
  let attachLeft = MAX_ATTACHED;
  return items.map((item, i) => {
    const needed = Math.max(1, used[i]?.size ?? item.layout.columns.length);
    const attach = item.images !== null && needed <= attachLeft;
    if (attach) attachLeft -= needed;
    return attach;
  });
}

/** Loads each planned table (images attached, or CSV rows inserted), then makes the database read-only. */
async function load(run: Run, images: AttachedImages, created: ReturnType<typeof createTable>[]): Promise<void> {
  const { guard, io, db, resolved, stats, limits, clock } = run;
  db.run("PRAGMA query_only = 0");
  const loadStarted = clock();
  const attach = fromImages(resolved.items, resolved.used);
  if (attach.some(Boolean)) createSlotsTable(db);
  for (const [i, table] of run.tables.entries()) {
    const reference = resolved.references[i]!;
    await io.control.progress(`Running: loading ${nameOf(reference)}.`);
    if (attach[i]) {
      await images.attach(db, table, resolved.items[i]!.images!, reference.data);
      continue;
    }
    const stream = await transient("opening a data item", () => io.source.open(resolved.items[i]!));
    if (!stream) throw new Stop(`Failed: the data of ${reference.data} was deleted while the query ran.`);
    const before = stats.bytesLoaded;
    let moved: LongWork | null = null;
    const loaded = await loadTable(db, table, created[i]!, stream, (bytes) => {
      stats.bytesLoaded = before + bytes;
      stats.loadMs = clock() - loadStarted;
      if (stats.bytesLoaded > limits.maxLoadBytes) return guard.overLoadLimit().message;
      if (guard.timeIsUp()) return guard.overTimeLimit(" while loading").message;
      moved = guard.pastQuickLane();
      if (moved) return moved.message;
      guard.measure(db);
      return null;
    });
    if (moved) throw moved;
    if (!loaded.ok)
      throw new Stop(loaded.message.startsWith("Failed:") ? loaded.message : `Failed: ${loaded.message}.`);
    stats.bytesLoaded = before + loaded.bytes;
    guard.measure(db);
  }
  // A view has no rowid; a table copied from it in file order numbers its rows as a loaded table would.
  const namesRowid = (resolved.tokens ?? []).some(
    (t) => t.kind === "identifier" && /^(rowid|oid|_rowid_)$/i.test(t.value),
  );
  await images.tablesInsteadOfViews(db, resolved.sql, namesRowid);
  stats.loadMs = clock() - loadStarted;
  guard.during = "";
  db.run("PRAGMA query_only = 1");
}

/**
 * Hands the checked query to the table store of item `host`: the store
 * brings the other items in, runs it next to the data and writes the result.
 * A store that stops mid-query fails the query (a transient failure of
 * storage is retried by the consumer).
 */
async function runInStore(run: Run, host: number): Promise<PhaseOutcome> {
  const { io, resolved, stats, limits, clock, names, declared } = run;
  // A store cannot stop a statement inside a step. Work that needs no data (a recursive CTE without an end) is
  // found first, here, on tables of one row of NULLs (an empty table would end a join before it began) under
  // the step-counted time limit, rather than holding the store.
  run.db.run("PRAGMA query_only = 0");
  for (const table of run.tables) run.db.run(`INSERT INTO ${quoteIdentifier(table.name)} DEFAULT VALUES`);
  run.db.run("PRAGMA query_only = 1");
  run.guard.during = " without its data, so it would not end in the table store either";
  await stepThrough(run.db, resolved.bound, run.guard);
  run.guard.during = "";
  const hostItem = resolved.items[host]!;
  await io.control.progress(
    `Running: estimating the work in the table store of ${nameOf(resolved.references[host]!)}.`,
  );
  // In the quick lane, an estimate that itself takes long (many steps on the samples) moves the query on.
  const estimate = await estimateSeconds(run.instance, resolved, host, io.source.sample.bind(io.source), () =>
    run.guard.pastQuickLane(),
  );
  if (estimate && pastTimeLimit(estimate, limits))
    return { ok: false, cancelled: false, message: overEstimate(estimate, limits, nameOf(resolved.references[host]!)) };
  // The quick lane waits on the store as on nothing else: work it cannot foresee as short goes to the long lane.
  if (limits.quickLaneMs && (!estimate || estimate.seconds * 1000 > limits.quickLaneMs))
    throw new LongWork(
      `the table store would work for ${estimate ? `about ${estimate.seconds.toFixed(1)} s` : "a time the samples could not tell"}`,
    );
  await io.control.progress(`Running: in the table store of ${nameOf(resolved.references[host]!)}.`);
  const request: StoreQuery = {
    queryId: io.queryId,
    // A store allows fewer compound terms than sql.js; longer compounds are nested (store/compound-terms.ts).
    sql: compoundsForStore(run.db, resolved.bound.sql),
    values: resolved.bound.values,
    names,
    declaredTypes: declared,
    hostAlias: resolved.references[host]!.alias,
    others: resolved.references.flatMap((reference, i) =>
      i === host
        ? []
        : [
            {
              alias: reference.alias,
              source: {
                objectKey: resolved.items[i]!.objectKey,
                layout: resolved.items[i]!.layout,
                rows: resolved.items[i]!.rows,
                name: reference.data,
              },
              columns: resolved.used[i] ? [...resolved.used[i]!] : null,
            },
          ],
    ),
    limits,
    timeLeftMs: Math.max(1, limits.timeLimitMs - (clock() - run.guard.startedAt)),
    maxStoreBytes: limits.maxStoreBytes,
    resultKey: io.resultKey,
  };
  let outcome: StoreQueryOutcome;
  try {
    outcome = await io.source.queryStore(hostItem.objectKey, request);
  } catch (error) {
    // A store reset for running past the limit (its CPU limit; locally, its process restarted) is not tried again.
    if (clock() - run.guard.startedAt >= limits.timeLimitMs)
      return {
        ok: false,
        cancelled: false,
        message: `${limitStops.time(limits).message.slice(0, -1)}; the table store was reset.`,
      };
    // Before its time is up, a store that went away was reset for another query (or its process restarted
    // locally): the query is tried again, as for any passing fault of storage.
    throw new TransientError(`the table store went away: ${String(error)}`);
  }
  if (!outcome.ok) {
    if (outcome.transient) throw new TransientError(outcome.message);
    return outcome;
  }
  stats.bytesLoaded = outcome.bytesLoaded;
  stats.loadMs = outcome.loadMs;
  stats.executeMs = outcome.executeMs;
  stats.writeMs = outcome.writeMs;
  return { ok: true, rowCount: outcome.rowCount, size: outcome.size, columns: outcome.columns };
}

/** A run's estimated seconds, and whether that is only a floor (the smallest sample already ran long). */
export interface RunEstimate {
  seconds: number;
  atLeast: boolean;
  sampledRows: number;
}

/**
 * Estimates a run's seconds from samples of its tables (estimate.ts): in a
 * table store (`host`: the item whose store runs it) its steps at the
 * store's rate plus copying in the other items; in sql.js its steps at
 * sql.js's rate plus loading every item. The rates are on the fast side of
 * what the bench measured, so a refusal is a clear overrun. Null when the
 * samples could not tell.
 */
export async function estimateSeconds(
  instance: SqliteInstance,
  resolved: Pick<Resolved, "references" | "items" | "used" | "bound">,
  host: number | null,
  sample: QuerySource["sample"],
  stopBetweenRuns?: () => Error | null,
): Promise<RunEstimate | null> {
  const samples = await Promise.all(
    resolved.items.map((item, i) =>
      transient("sampling a data item", () => sample(item, resolved.used[i]!, SAMPLE_ROWS)),
    ),
  );
  const tables = resolved.references.map((reference, i) => ({
    name: reference.alias,
    layout: resolved.items[i]!.layout,
    columns: resolved.used[i]!,
  }));
  const rows = resolved.items.map((item, i) => Math.max(item.rows, samples[i]!.length));
  const work = await estimateWork(instance, tables, rows, samples, resolved.bound, stopBetweenRuns);
  if (!work) return null;
  const loading = resolved.items.reduce(
    (sum, item, i) =>
      i === host
        ? sum
        : sum + item.bytes / (host === null ? SQLJS_LOAD_BYTES_PER_SECOND : STORE_BRING_IN_BYTES_PER_SECOND),
    0,
  );
  const rate = host === null ? SQLJS_STEPS_PER_SECOND : STORE_STEPS_PER_SECOND;
  return { seconds: work.steps / rate + loading, atLeast: "atLeast" in work, sampledRows: work.sampledRows };
}

/** Whether a run estimated so would be refused: the one rule the engine applies and validation reports. */
export function pastTimeLimit(estimate: RunEstimate, limits: Pick<QueryLimits, "timeLimitMs">): boolean {
  return estimate.seconds > limits.timeLimitMs / 1000;
}

/** Why a query estimated past the time limit is not started, as the engine fails it and validation reports it. */
export function overEstimate(estimate: RunEstimate, limits: QueryLimits, name: string): string {
  const seconds =
    estimate.seconds >= 100 ? Math.round(estimate.seconds).toLocaleString("en-US") : estimate.seconds.toFixed(1);
  return `${OVERRUN_OPENINGS.estimated} ${estimate.atLeast ? "at least" : "about"} ${seconds} s in the table store of ${name} (estimated from ${estimate.sampledRows} sampled rows), past the time limit of ${limits.timeLimitMs / 1000} s (QUERY_TIME_LIMIT_SECONDS), so it was not started. Make it do less: filter rows before joining, join on a key, or aggregate first.`;
}

/** The result's column names as SQLite gives them for the statement, prepared and not run. */
export function columnNames(db: Database, sql: string): string[] {
  const statement = db.prepare(sql);
  try {
    return statement.getColumnNames();
  } finally {
    statement.free();
  }
}
