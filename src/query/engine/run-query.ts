import type { Database } from "sql.js";
import type { StoredDataSchema } from "../../ingest/data-schema";
import type { DataTypeName } from "../../ingest/value-types";
import type { QueryLimits } from "../../config";
import type { ResultColumn } from "../query-record";
import { checkReadOnly } from "../sql/read-only";
import { columnsUsed, rewriteTableNames, type DataItemReference } from "../sql/table-names";
import { tokenize } from "../sql/tokenizer";
import { databaseFileName, retireIfGrown, sqliteInstanceFor } from "../sqlite";
import { guardStatements } from "../sqlite-guard";
import { createImageView, createSlotsTable, type AttachedColumn, type ColumnImages } from "./column-images";
import { csvField, CsvResultWriter, StorageClass } from "./csv-result";
import { createTable, loadTable, quoteIdentifier, TransientError, type TableToLoad } from "./load-table";

/** A data item the engine may load: where its bytes are, how they are laid out, and its column images if built. */
export interface LoadableItem {
  objectKey: string;
  schema: StoredDataSchema;
  images: ColumnImages | null;
}

/** sql.js attaches at most this many databases to one connection (SQLite's default SQLITE_MAX_ATTACHED). */
const MAX_ATTACHED = 10;

/** Where the engine reads data items from: the catalog (with its visibility rule) and storage. */
export interface QuerySource {
  /** The data item behind a three-part name, or null when it does not exist or the query's owner may not read it. */
  find(reference: DataItemReference): Promise<LoadableItem | null>;
  /** The stored bytes; null when the object is gone (the item was deleted meanwhile). */
  open(item: LoadableItem): Promise<ReadableStream<Uint8Array> | null>;
  /** One column image, whole; null when it is gone (the version was replaced and swept meanwhile). */
  openImage(key: string): Promise<Uint8Array | null>;
}

/** Where the result CSV goes, as it is produced. */
export interface ResultTarget {
  write(bytes: Uint8Array): Promise<void>;
  finish(): Promise<void>;
  abort(): Promise<void>;
}

/** How the runner learns it should stop, and tells what it is doing. */
export interface RunControl {
  cancelled(): Promise<boolean>;
  progress(message: string): Promise<void>;
}

export interface RunStats {
  bytesLoaded: number;
  peakMemoryBytes: number;
  loadMs: number;
  executeMs: number;
  writeMs: number;
}

export type EngineOutcome =
  | ({ ok: true; rowCount: number; size: number; columns: ResultColumn[] } & RunStats)
  | ({ ok: false; cancelled: boolean; message: string } & RunStats);

/** How often (rows) the runner looks at the clock, the memory and cancellation while stepping. */
const CHECK_EVERY_ROWS = 4096;
const CANCEL_CHECK_MS = 1000;
/**
 * Inside a statement a deployed Worker's clock stands still, so time is also
 * counted as SQLite virtual-machine steps: a query has run at least
 * steps / VM_STEPS_PER_SECOND seconds. The rate is that of the fastest
 * shapes measured in workerd here (15–65 M steps/s: bench/README.md), so
 * the count never stops a query before its time; the memory is looked at
 * every `PROGRESS_EVERY_STEPS`.
 */
export const VM_STEPS_PER_SECOND = 60_000_000;
const PROGRESS_EVERY_STEPS = 10_000;
/** Between rows, give other requests a turn after this much work (about 0.1 s), whatever the row count. */
const YIELD_EVERY_STEPS = VM_STEPS_PER_SECOND / 10;
const CANCEL_CHECK_STEPS = VM_STEPS_PER_SECOND;
/** The longest value (string, blob, row) a query may make: room for the longest CSV row in UTF-8, four times over. */
export const MAX_VALUE_BYTES = 32 << 20;

class Stop extends Error {
  constructor(
    message: string,
    readonly cancelled = false,
  ) {
    super(message);
  }
}

/**
 * Runs one query: resolves its data item names through `source`, loads
 * only the columns it uses into a fresh in-memory SQLite, refuses anything
 * but one read-only statement, steps the result row by row into `target`,
 * and stops at every limit with a message naming it. Time (as work done)
 * and memory are checked inside a statement too (sqlite-guard.ts);
 * cancellation between rows. The database is always closed, and an
 * instance whose heap the query grew by more than a quarter of the budget is
 * retired, so the next query starts on a clean heap.
 */
export async function runQuery(
  sql: string,
  io: { source: QuerySource; target: ResultTarget; control: RunControl },
  limits: QueryLimits,
  clock: () => number = Date.now,
): Promise<EngineOutcome> {
  const started = clock();
  const stats: RunStats = { bytesLoaded: 0, peakMemoryBytes: 0, loadMs: 0, executeMs: 0, writeMs: 0 };
  const deadline = started + limits.timeLimitMs;
  let db: Database | null = null;
  /** Attached column images, by the view that reads them. */
  const images: { view: string; schema: string; db: Database; bytes: number }[] = [];
  let imageBytes = 0;
  let lastCancelCheck = started;
  let targetOpen = false;
  const instance = await sqliteInstanceFor(limits.memoryBudgetBytes);
  const { Database } = instance.sql;
  let unguard: (() => void) | null = null;
  /** Work done so far, in virtual-machine steps, counted by the progress handler. */
  let steps = 0;
  let stepsAtYield = 0;
  let stepsAtCancelCheck = 0;
  const stepBudget = (limits.timeLimitMs / 1000) * VM_STEPS_PER_SECOND;
  /** Memory outside the WebAssembly heap: the database's pages and the images, as last measured. */
  let fileBytes = 0;
  /** Why the progress handler interrupted the statement. */
  let interruption: Stop | null = null;
  let loading = true;

  const overTimeLimit = (during = "") =>
    new Stop(
      `Failed: the query ran longer than the time limit of ${limits.timeLimitMs / 1000} s (QUERY_TIME_LIMIT_SECONDS)${during}.`,
    );
  const overLoadLimit = `Failed: the query would load more than the limit of ${limits.maxLoadBytes} bytes (QUERY_MAX_LOAD_BYTES). Query fewer or smaller data items.`;
  const overBudget = (bytes: number) =>
    new Stop(
      `Failed: the query needs more than the memory budget of ${limits.memoryBudgetBytes} bytes (QUERY_MEMORY_BUDGET_BYTES; it held ${bytes}). Select fewer columns or rows.`,
    );
  const measure = () => {
    fileBytes = databaseFileBytes(db) + imageBytes;
    const bytes = instance.heapBytes() + fileBytes;
    stats.peakMemoryBytes = Math.max(stats.peakMemoryBytes, bytes);
    if (bytes > limits.memoryBudgetBytes) throw overBudget(bytes);
  };
  /** Inside a statement, every PROGRESS_EVERY_STEPS steps: true stops it. Synchronous: it may not call SQLite. */
  const onProgress = () => {
    steps += PROGRESS_EVERY_STEPS;
    // The clock moves here under `wrangler dev` (and after I/O when deployed); the steps count either way.
    if (steps > stepBudget || clock() > deadline) interruption = overTimeLimit(loading ? " while loading" : "");
    const bytes = instance.heapBytes() + fileBytes;
    stats.peakMemoryBytes = Math.max(stats.peakMemoryBytes, bytes);
    if (bytes > limits.memoryBudgetBytes) interruption ??= overBudget(bytes);
    return interruption !== null;
  };
  /** Between rows: the limits, cancellation, and a turn for other requests, all by work done. */
  const checkpoint = async (force: boolean) => {
    if (!force && steps - stepsAtYield < YIELD_EVERY_STEPS) return;
    stepsAtYield = steps;
    const now = clock();
    if (now > deadline || steps > stepBudget) throw overTimeLimit();
    if (now - lastCancelCheck >= CANCEL_CHECK_MS || steps - stepsAtCancelCheck >= CANCEL_CHECK_STEPS) {
      lastCancelCheck = now;
      stepsAtCancelCheck = steps;
      if (await io.control.cancelled()) throw new Stop("Cancelled by its owner.", true);
    }
    measure();
    // Give other requests of this isolate (and the clock) a turn.
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  /** The limit behind an error of SQLite's: the interruption, or an allocation or value refused at its limit. */
  const limitReached = (error: unknown): Stop | null => {
    if (interruption) return interruption;
    const message = error instanceof Error ? error.message : String(error);
    if (/^out of memory$/i.test(message)) return overBudget(instance.heapBytes() + fileBytes);
    if (/^string or blob too big$/i.test(message))
      return new Stop(
        `Failed: the query makes a value or row longer than the limit of ${MAX_VALUE_BYTES} bytes (the longest value a query may make). Select shorter values.`,
      );
    return null;
  };
  /** Runs a sql.js call; SQLite's own errors (at prepare or at a step) fail the query with SQLite's message. */
  const sqlite = <T>(run: () => T): T => {
    try {
      return run();
    } catch (error) {
      throw limitReached(error) ?? new Stop(`Failed: ${error instanceof Error ? error.message : String(error)}.`);
    }
  };
  /**
   * Replaces the (empty) table `table.name` by a view over the column images
   * of the columns it needs, each fetched whole and attached. Their sizes are
   * known beforehand, so a query that cannot fit fails before fetching.
   */
  const attachImages = async (target: Database, table: TableToLoad, recorded: ColumnImages, dataName: string) => {
    const all = table.schema.TableDefinition.Columns;
    const wanted = all.flatMap((column, index) =>
      !table.columns || table.columns.has(column.Name.toLowerCase()) ? [index] : [],
    );
    // A query that names no column still needs the rows: the smallest image supplies them.
    const smallest = recorded.columns.reduce(
      (best, c, index) => (c.bytes < recorded.columns[best]!.bytes ? index : best),
      0,
    );
    const fetch = wanted.length > 0 ? wanted : [smallest];
    const fetchBytes = fetch.reduce((sum, index) => sum + recorded.columns[index]!.bytes, 0);
    if (stats.bytesLoaded + fetchBytes > limits.maxLoadBytes) throw new Stop(overLoadLimit);
    const expected = instance.heapBytes() + databaseFileBytes(target) + imageBytes + fetchBytes;
    if (expected > limits.memoryBudgetBytes) throw overBudget(expected);
    target.run(`DROP TABLE ${quoteIdentifier(table.name)}`);
    const attached: AttachedColumn[] = [];
    for (const index of fetch) {
      const bytes = await transient("reading a column image", () => io.source.openImage(recorded.columns[index]!.key));
      if (!bytes) throw new Stop(`Failed: the data of ${dataName} was replaced or deleted while the query ran.`);
      if (clock() > deadline) throw overTimeLimit(" while loading");
      // sql.js copies the image into its in-memory file system; the fetched bytes are let go.
      const image = new Database(bytes);
      const schema = `${table.name}_c${index}`;
      images.push({ view: table.name, schema, db: image, bytes: bytes.byteLength });
      imageBytes += bytes.byteLength;
      stats.bytesLoaded += bytes.byteLength;
      target.run(`ATTACH '${databaseFileName(image)}' AS ${quoteIdentifier(schema)}`);
      if (wanted.length > 0) attached.push({ name: all[index]!.Name, type: all[index]!.DataType.DataType, schema });
      measure();
    }
    createImageView(target, table.name, attached, `${table.name}_c${fetch[0]}`, recorded.rows);
  };
  /**
   * Copies each view of column images into a real table (INSERT … SELECT
   * inside SQLite, no value crosses into JavaScript, rows in file order) and
   * lets its images go, when a view would not do: SQLite's plan builds an
   * automatic index over it (a self-join, say: it would materialize the view
   * anyway, after picking a worse join order than for a table), or the query
   * names `rowid`, which a view lacks. Only if the copies fit the memory
   * budget; if not, the query runs on the views (slower, or failing with
   * SQLite's message about rowid).
   */
  const tableInsteadOfViews = async (target: Database, sql: string, namesRowid: boolean) => {
    const views = [...new Set(images.map((image) => image.view))];
    if (views.length === 0) return;
    if (!namesRowid && !automaticIndexOnView(target, sql, views)) return;
    if (instance.heapBytes() + databaseFileBytes(target) + 2 * imageBytes > limits.memoryBudgetBytes) return;
    await io.control.progress("Running: copying the column images into tables, for a better join plan.");
    for (const view of views) {
      const name = quoteIdentifier(view);
      const copy = quoteIdentifier(`${view}_table`);
      sqlite(() => target.run(`CREATE TABLE main.${copy} AS SELECT * FROM temp.${name}`));
      measure(); // the peak: the copy and the images it came from
      target.run(`DROP VIEW temp.${name}`);
      target.run(`ALTER TABLE main.${copy} RENAME TO ${name}`);
      for (const image of images.filter((image) => image.view === view)) {
        target.run(`DETACH ${quoteIdentifier(image.schema)}`);
        image.db.close();
        imageBytes -= image.bytes;
      }
      measure();
    }
    images.splice(0, images.length);
  };
  // Messages speak of the data items as the user named them, not of the internal tables.
  let internalNames: { alias: string; name: string }[] = [];
  const userFacing = (message: string) =>
    internalNames.reduce((text, { alias, name }) => text.replace(new RegExp(`\\b${alias}\\b`, "g"), name), message);

  try {
    const names = rewriteTableNames(sql);
    if (!names.ok) return { ok: false, cancelled: false, message: `Failed: ${names.message}`, ...stats };
    internalNames = names.tables.map((t) => ({ alias: t.alias, name: `${t.account}.${t.dataset}.${t.data}` }));
    const items: LoadableItem[] = [];
    for (const reference of names.tables) {
      const item = await transient("reading the catalog", () => io.source.find(reference));
      if (!item)
        return {
          ok: false,
          cancelled: false,
          message: `Failed: table ${reference.account}.${reference.dataset}.${reference.data} does not exist, or you may not read it.`,
          ...stats,
        };
      items.push(item);
    }

    db = new Database();
    unguard = guardStatements(instance, db, {
      maxValueBytes: MAX_VALUE_BYTES,
      everySteps: PROGRESS_EVERY_STEPS,
      onProgress,
    });
    const tokens = tokenize(names.sql);
    const tableColumns = new Map(
      names.tables.map((reference, i) => [
        reference.alias,
        items[i]!.schema.TableDefinition.Columns.map((c) => c.Name),
      ]),
    );
    const used = tokens.ok ? columnsUsed(tokens.tokens, tableColumns) : new Map();
    const layouts = names.tables.map((reference, i) => {
      const selection = used.get(reference.alias) ?? "all";
      const columns = selection === "all" ? null : new Set([...selection].map((name) => name.toLowerCase()));
      return { table: { name: reference.alias, schema: items[i]!.schema, columns } };
    });
    const created = layouts.map(({ table }) => createTable(db!, table));

    // Checked on the empty tables, before anything is loaded: a refused query costs nothing.
    const readOnly = checkReadOnly(db, names.sql);
    if (!readOnly.ok)
      return { ok: false, cancelled: false, message: userFacing(`Failed: ${readOnly.message}.`), ...stats };
    db.run("PRAGMA query_only = 0");

    const loadStarted = clock();
    // Column images where built, as long as they fit the attach limit; the CSV otherwise.
    let attachLeft = MAX_ATTACHED;
    const fromImages = layouts.map(({ table }, i) => {
      const needed = Math.max(1, table.columns?.size ?? table.schema.TableDefinition.Columns.length);
      if (!items[i]!.images || needed > attachLeft) return false;
      attachLeft -= needed;
      return true;
    });
    if (fromImages.some(Boolean)) createSlotsTable(db);
    for (const [i, { table }] of layouts.entries()) {
      await io.control.progress(
        `Running: loading ${names.tables[i]!.account}.${names.tables[i]!.dataset}.${names.tables[i]!.data}.`,
      );
      if (fromImages[i]) {
        await attachImages(db, table, items[i]!.images!, names.tables[i]!.data);
        continue;
      }
      const stream = await transient("opening a data item", () => io.source.open(items[i]!));
      if (!stream) throw new Stop(`Failed: the data of ${names.tables[i]!.data} was deleted while the query ran.`);
      const before = stats.bytesLoaded;
      const loaded = await loadTable(db, table, created[i]!, stream, (bytes) => {
        stats.bytesLoaded = before + bytes;
        stats.loadMs = clock() - loadStarted;
        if (stats.bytesLoaded > limits.maxLoadBytes) return overLoadLimit;
        if (clock() > deadline || steps > stepBudget) return overTimeLimit(" while loading").message;
        measure();
        return null;
      });
      if (!loaded.ok)
        throw new Stop(loaded.message.startsWith("Failed:") ? loaded.message : `Failed: ${loaded.message}.`);
      stats.bytesLoaded = before + loaded.bytes;
      measure();
    }
    // A view has no rowid; a table copied from it in file order numbers its rows as a loaded table would.
    const namesRowid =
      tokens.ok && tokens.tokens.some((t) => t.kind === "identifier" && /^(rowid|oid|_rowid_)$/i.test(t.value));
    await tableInsteadOfViews(db, names.sql, namesRowid);
    stats.loadMs = clock() - loadStarted;
    loading = false;
    db.run("PRAGMA query_only = 1");

    await io.control.progress("Running: executing the query.");
    const executeStarted = clock();
    measure();
    const result = await execute(db, names.sql, io.target, limits, { sqlite, checkpoint }, () => (targetOpen = true));
    stats.executeMs = clock() - executeStarted - result.writeMs;
    stats.writeMs = result.writeMs;
    return { ok: true, rowCount: result.rowCount, size: result.size, columns: result.columns, ...stats };
  } catch (caught) {
    if (targetOpen) await io.target.abort();
    const error = caught instanceof TransientError ? caught : (limitReached(caught) ?? caught);
    if (error instanceof Stop)
      return { ok: false, cancelled: error.cancelled, message: userFacing(error.message), ...stats };
    if (error instanceof TransientError) throw error;
    // SQLite's own errors (too many columns, out of memory, …) and anything unforeseen end the query for good.
    return {
      ok: false,
      cancelled: false,
      message: userFacing(`Failed: ${error instanceof Error ? error.message : String(error)}.`),
      ...stats,
    };
  } finally {
    unguard?.();
    db?.close();
    for (const image of images) image.db.close();
    retireIfGrown(instance, limits.memoryBudgetBytes / 4);
  }
}

async function execute(
  db: Database,
  sql: string,
  target: ResultTarget,
  limits: QueryLimits,
  guard: { sqlite: <T>(run: () => T) => T; checkpoint: (force: boolean) => Promise<void> },
  opened: () => void,
): Promise<{ rowCount: number; size: number; columns: ResultColumn[]; writeMs: number }> {
  const { sqlite, checkpoint } = guard;
  let writeMs = 0;
  const timedWrite = async (bytes: Uint8Array) => {
    const t = Date.now();
    await transient("writing the result", () => target.write(bytes));
    writeMs += Date.now() - t;
  };
  const statement = sqlite(() => db.prepare(sql));
  const row = statement as unknown as { get(params: null, config: { useBigInt: boolean }): unknown[] };
  try {
    const names = statement.getColumnNames();
    const seen: Set<StorageClass>[] = names.map(() => new Set());
    const writer = new CsvResultWriter(timedWrite);
    opened();
    await writer.header(names);
    let rowCount = 0;
    while (sqlite(() => statement.step())) {
      // useBigInt tells INTEGER (bigint) from REAL (number) exactly, and keeps 64-bit integers whole.
      const values = row.get(null, { useBigInt: true });
      let line = "";
      for (let i = 0; i < values.length; i++) {
        const storage = storageClass(values[i]);
        seen[i]!.add(storage);
        line += (i === 0 ? "" : ",") + csvField(values[i], storage);
      }
      if (rowCount === limits.maxResultRows)
        throw new Stop(
          `Failed: the result has more than the limit of ${limits.maxResultRows} rows (QUERY_MAX_RESULT_ROWS). Add a LIMIT or aggregate.`,
        );
      await writer.line(line);
      rowCount++;
      await checkpoint(rowCount % CHECK_EVERY_ROWS === 0);
      if (rowCount % CHECK_EVERY_ROWS === 0) {
        if (writer.flushedSize > limits.maxResultBytes)
          throw new Stop(
            `Failed: the result is larger than the limit of ${limits.maxResultBytes} bytes (QUERY_MAX_RESULT_BYTES). Add a LIMIT or aggregate.`,
          );
      }
    }
    await writer.flush();
    if (writer.size > limits.maxResultBytes)
      throw new Stop(
        `Failed: the result is larger than the limit of ${limits.maxResultBytes} bytes (QUERY_MAX_RESULT_BYTES).`,
      );
    const t = Date.now();
    await transient("writing the result", () => target.finish());
    writeMs += Date.now() - t;
    return {
      rowCount,
      size: writer.size,
      columns: names.map((name, i) => ({ name, type: resultType(seen[i]!) })),
      writeMs,
    };
  } finally {
    statement.free();
  }
}

function storageClass(value: unknown): StorageClass {
  if (value === null) return StorageClass.Null;
  switch (typeof value) {
    case "bigint":
      return StorageClass.Integer;
    case "number":
      return StorageClass.Float;
    case "string":
      return StorageClass.Text;
    default:
      return StorageClass.Blob;
  }
}

/** A result column's type from the storage classes its values had: the narrowest that holds them all. */
function resultType(seen: Set<StorageClass>): DataTypeName {
  seen.delete(StorageClass.Null);
  if (seen.size === 0) return "STRING";
  if ([...seen].every((s) => s === StorageClass.Integer)) return "INTEGER";
  if ([...seen].every((s) => s === StorageClass.Integer || s === StorageClass.Float)) return "DOUBLE";
  return "STRING";
}

/**
 * True when SQLite's plan for `sql` builds an automatic index over one of
 * `views` (or an alias of one): anything automatically indexed that is not
 * a subquery the plan itself materializes.
 */
function automaticIndexOnView(db: Database, sql: string, views: string[]): boolean {
  let plan: string[];
  try {
    plan = db.exec(`EXPLAIN QUERY PLAN ${sql}`)[0]?.values.map((row) => String(row[3])) ?? [];
  } catch {
    return false; // SQLite's own error is reported when the statement is prepared for real.
  }
  const subqueries = new Set(
    plan
      .flatMap((line) => /^(?:CO-ROUTINE|MATERIALIZE) (\S+)/.exec(line)?.[1] ?? [])
      .filter((name) => !views.includes(name)),
  );
  const indexed = plan.flatMap((line) => /^SEARCH (\S+) USING AUTOMATIC/.exec(line)?.[1] ?? []);
  return indexed.some((name) => !subqueries.has(name));
}

/** Bytes of the database's pages, which sql.js keeps in its in-memory file system, outside the WebAssembly heap. */
function databaseFileBytes(db: Database | null): number {
  if (!db) return 0;
  const result = db.exec("PRAGMA page_count; PRAGMA page_size");
  const pages = Number(result[0]?.values[0]?.[0] ?? 0);
  const size = Number(result[1]?.values[0]?.[0] ?? 0);
  return pages * size;
}

/** Runs a storage call; its failure is transient (the consumer retries the query). */
async function transient<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof TransientError) throw error;
    throw new TransientError(`${what} failed: ${String(error)}`);
  }
}
