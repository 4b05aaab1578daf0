import { DurableObject } from "cloudflare:workers";
import type { QueryLimits } from "../../config";
import type { DataTypeName } from "../../ingest/value-types";
import { LARGE_RANGE_BYTES, openObjectStream } from "../../storage/object-stream";
import { randomToken } from "../../util/crypto";
import type { ResultColumn } from "../query-record";
import { StorageClass } from "../result/csv";
import { storedResultTarget } from "../result/stored-result";
import { ResultWriter, type ResultTarget } from "../result/writer";
import { limitStops, Stop, TransientError } from "../run-limits";
import { internalTableName } from "../sql/internal-names";
import type { BoundValue } from "../sql/parameters";
import { tokenize } from "../sql/tokenizer";
import { quoteIdentifier, type TableLayout } from "../table-layout";
import type { LoadProgress } from "../stored-csv";
import { fillTable, type StoreSql } from "./fill-table";
import { printfBeyondStore, storeLimitMessage } from "./store-limits";
import { hasMoreThanOneStatement, quotedResultSql, renameTables, STORE_MAX_COLUMNS, unquoteRow } from "./store-sql";

const BUILT_KEY = "built";
/** Internal table names, as the engine writes them (t0, t1, …); anything else in a request is refused. */
const INTERNAL_NAME = /^t\d+$/;
/** Between rows, the store looks at the clock and cancellation this often (rows, or time as far as it moves). */
const CHECK_EVERY_ROWS = 1024;
const CHECK_EVERY_MS = 100;
const CANCEL_CHECK_MS = 1000;

/** A stored CSV to read: where it is, how it is laid out, how many rows the catalog counted. */
export interface StoreSource {
  objectKey: string;
  layout: TableLayout;
  rows: number;
  /** The data item's name, for messages. */
  name: string;
}

export type StoreBuildOutcome = { ok: true; rows: number; bytes: number } | { ok: false; message: string };

/** One query for the store: the rewritten SQL, which internal name is this store's table, and what to bring in. */
export interface StoreQuery {
  queryId: string;
  sql: string;
  /** The values of the `?K` placeholders of `sql`, by position (absent from an engine of an earlier version). */
  values?: BoundValue[];
  /** The result's column names, as the sql.js check on the empty tables gave them. */
  names: string[];
  /** The data type each result column keeps when its values fit (engine/declared-types.ts); absent: none. */
  declaredTypes?: (DataTypeName | null)[];
  hostAlias: string;
  /** Other data items the query names, brought in for this query (only the columns it uses: lower case, or null). */
  others: { alias: string; source: StoreSource; columns: string[] | null }[];
  limits: QueryLimits;
  /** What is left of the query's time when the store starts on it. */
  timeLeftMs: number;
  maxStoreBytes: number;
  resultKey: string;
}

export type StoreQueryOutcome =
  | {
      ok: true;
      rowCount: number;
      size: number;
      columns: ResultColumn[];
      loadMs: number;
      executeMs: number;
      writeMs: number;
      bytesLoaded: number;
    }
  | { ok: false; cancelled: boolean; message: string; transient?: boolean };

/**
 * A table store: one SQLite Durable Object per large data item version,
 * holding its typed rows, where queries on that version run natively next
 * to the data. It owns the rows and nothing else (the catalog says whether
 * it is ready; the query's state lives in QueryState). Queries run on the
 * rewritten SQL that the engine has already checked in sql.js; here they
 * are also wrapped so only a SELECT can run, and their first step runs in a
 * transaction that is rolled back if it wrote anything.
 */
export class TableStore extends DurableObject<Env> {
  private building: Promise<StoreBuildOutcome> | null = null;
  /** Tables brought in by the queries running now; any other `q_…` table was left by a query that died. */
  private readonly broughtIn = new Set<string>();

  /** Fills the store from the stored CSV, once; a second call returns the first one's outcome. */
  async build(source: StoreSource, maxStoreBytes: number): Promise<StoreBuildOutcome> {
    const built = await this.ctx.storage.get<Built>(BUILT_KEY);
    if (built) return { ok: true, rows: built.rows, bytes: this.ctx.storage.sql.databaseSize };
    this.building ??= this.fill(source, maxStoreBytes).finally(() => (this.building = null));
    return this.building;
  }

  /** Empties the store for good (its version was replaced or deleted). */
  async empty(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }

  /** How many rows the store holds, or null before it is built. */
  async rows(): Promise<number | null> {
    return (await this.ctx.storage.get<Built>(BUILT_KEY))?.rows ?? null;
  }

  /**
   * Fills a table named at random (a query's own common table expression
   * could otherwise shadow a fixed name), dropping any half-filled one of a
   * build that stopped.
   */
  private async fill(source: StoreSource, maxStoreBytes: number): Promise<StoreBuildOutcome> {
    const { sql } = this.ctx.storage;
    for (const { name } of sql
      .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'data_%'`)
      .toArray())
      sql.exec(`DROP TABLE ${quoteIdentifier(name)}`);
    const table = `data_${randomToken(12).replace(/[^A-Za-z0-9]/g, "x")}`;
    const stream = await openObjectStream(this.env.BUCKET, source.objectKey, LARGE_RANGE_BYTES);
    if (!stream) return { ok: false, message: `the stored file of ${source.name} is gone` };
    let filled: LoadProgress;
    try {
      filled = await fillTable(
        this.storeSql(),
        table,
        { name: source.name, layout: source.layout, stream },
        null,
        () => (sql.databaseSize > maxStoreBytes ? storeFull(maxStoreBytes).message : null),
      );
    } catch (error) {
      // Storage failing is worth a retry; SQLite refusing the rows (a value over its size limit, say) is not.
      if (error instanceof TransientError) throw error;
      filled = { ok: false, message: `a table store cannot hold ${source.name}: ${sqliteText(error)}` };
    }
    const problem = !filled.ok
      ? filled.message
      : filled.rows !== source.rows
        ? `${source.name} has ${filled.rows} rows, the catalog says ${source.rows}`
        : sql.databaseSize > maxStoreBytes
          ? storeFull(maxStoreBytes).message
          : null;
    if (problem !== null || !filled.ok) {
      sql.exec(`DROP TABLE IF EXISTS ${quoteIdentifier(table)}`);
      return { ok: false, message: problem ?? "the build failed" };
    }
    await this.ctx.storage.put(BUILT_KEY, { rows: filled.rows, table } satisfies Built);
    return { ok: true, rows: filled.rows, bytes: sql.databaseSize };
  }

  /**
   * About `count` rows picked at random (rowids drawn with repetition, so a
   * few fewer), of the named columns, for estimating a query's work
   * (engine/estimate.ts). Empty before the store is built.
   */
  async sample(columns: string[], count: number): Promise<unknown[][]> {
    const built = await this.ctx.storage.get<Built>(BUILT_KEY);
    if (!built || columns.length === 0 || columns.length > STORE_MAX_COLUMNS) return [];
    const { sql } = this.ctx.storage;
    const table = quoteIdentifier(built.table);
    const last = Number(sql.exec<{ last: number | null }>(`SELECT max(rowid) AS last FROM ${table}`).one().last ?? 0);
    if (last === 0) return [];
    const rows = sql.exec(
      `WITH RECURSIVE draw(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM draw WHERE n < ?)
       SELECT ${columns.map(quoteIdentifier).join(", ")} FROM ${table}
       WHERE rowid IN (SELECT abs(random() % ?) + 1 FROM draw)`,
      Math.min(count, last),
      last,
    );
    return [...rows.raw()];
  }

  /** Runs one query over this store's rows (and the other items it names, brought in) into its result object. */
  async query(request: StoreQuery): Promise<StoreQueryOutcome> {
    const built = await this.ctx.storage.get<Built>(BUILT_KEY);
    if (!built) return { ok: false, cancelled: false, transient: true, message: "the table store is not built" };
    const refused = refusal(request) ?? printfBeyondStore(request.sql, request.values ?? []);
    if (refused) return { ok: false, cancelled: false, message: refused };
    if (request.names.length > STORE_MAX_COLUMNS)
      return { ok: false, cancelled: false, message: tooManyColumns(request.names.length) };
    this.dropLeftovers();
    const started = Date.now();
    const deadline = started + request.timeLeftMs;
    const tables = new Map([[request.hostAlias.toLowerCase(), built.table]]);
    const broughtIn: string[] = [];
    const target = storedResultTarget(this.env.BUCKET, request.resultKey);
    let targetOpen = false;
    try {
      let bytesLoaded = 0;
      for (const other of request.others) {
        const name = `q_${randomToken(8)}_${other.alias}`;
        broughtIn.push(name);
        this.broughtIn.add(name);
        bytesLoaded += await this.bringIn(name, other, request, deadline);
        tables.set(other.alias.toLowerCase(), name);
      }
      const loadMs = Date.now() - started;
      targetOpen = true;
      const executeStarted = Date.now();
      const result = await this.run(request, renameTables(request.sql, tables), target, deadline);
      return {
        ok: true,
        ...result,
        loadMs,
        executeMs: Date.now() - executeStarted - result.writeMs,
        bytesLoaded,
      };
    } catch (error) {
      if (targetOpen) await target.abort().catch(() => {});
      if (error instanceof Stop) return { ok: false, cancelled: error.cancelled, message: error.message };
      if (error instanceof TransientError)
        return { ok: false, cancelled: false, transient: true, message: error.message };
      return {
        ok: false,
        cancelled: false,
        message: `Failed: ${sqliteMessage(error)}.`,
      };
    } finally {
      for (const name of broughtIn) {
        this.broughtIn.delete(name);
        this.dropTable(name);
      }
    }
  }

  /** This object's SQL storage and its transactions, as fillTable writes through them. */
  private storeSql(): StoreSql {
    const storage = this.ctx.storage;
    return { sql: storage.sql, transactionSync: (run) => storage.transactionSync(run) };
  }

  /**
   * Drops the tables queries brought in that no running query owns: those
   * of a query whose own drop could not be done, or that the object stopped
   * under.
   */
  private dropLeftovers(): void {
    const tables = this.ctx.storage.sql.exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'q_*'",
    );
    for (const { name } of tables.toArray()) if (!this.broughtIn.has(name)) this.dropTable(name);
  }

  /**
   * Drops a brought-in table, unless SQLite cannot yet: a statement still
   * open on the store (another query's, or one that stopped between rows,
   * until its cursor is collected) keeps DROP TABLE locked. A later query
   * drops it then.
   */
  private dropTable(name: string): void {
    try {
      this.ctx.storage.sql.exec(`DROP TABLE IF EXISTS ${quoteIdentifier(name)}`);
    } catch (error) {
      if (!/SQLITE_LOCKED|locked/i.test(String(error))) throw error;
    }
  }

  /**
   * Copies the columns a query uses of another data item into a table of
   * this store, for this query only. QUERY_MAX_LOAD_BYTES, which bounds what
   * sql.js holds in an isolate, does not apply: the store's size and the
   * time limit do, so two large items can be joined.
   */
  private async bringIn(
    name: string,
    other: StoreQuery["others"][number],
    request: StoreQuery,
    deadline: number,
  ): Promise<number> {
    const width = other.columns?.length ?? other.source.layout.columns.length;
    if (width > STORE_MAX_COLUMNS) throw new Stop(tooManyColumns(width, other.source.name));
    const stream = await openObjectStream(this.env.BUCKET, other.source.objectKey, LARGE_RANGE_BYTES).catch(
      (error: unknown) => {
        throw new TransientError(`reading ${other.source.name} failed: ${String(error)}`);
      },
    );
    if (!stream) throw new Stop(`Failed: the data of ${other.source.name} was deleted while the query ran.`);
    const { sql } = this.ctx.storage;
    const filled = await fillTable(
      this.storeSql(),
      name,
      { name: other.source.name, layout: other.source.layout, stream },
      other.columns ? new Set(other.columns) : null,
      () => {
        if (Date.now() > deadline) return limitStops.time(request.limits, " while loading").message;
        if (sql.databaseSize > request.maxStoreBytes) return storeFull(request.maxStoreBytes).message;
        return null;
      },
    );
    if (!filled.ok)
      throw new Stop(filled.message.startsWith("Failed:") ? filled.message : `Failed: ${filled.message}.`);
    return filled.bytes;
  }

  /** Steps the wrapped statement into the shared result writer, checking time and cancellation between rows. */
  private async run(request: StoreQuery, sql: string, target: ResultTarget, deadline: number) {
    const writer = new ResultWriter(request.names, request.limits, target, request.declaredTypes);
    await writer.header();
    const cursor = this.readOnlyCursor(quotedResultSql(sql, request.names.length), request.values ?? []);
    const values: unknown[] = new Array(request.names.length);
    const classes: StorageClass[] = new Array(request.names.length);
    let lastCancelCheck = Date.now();
    let lastCheck = lastCancelCheck;
    // A statement cannot be interrupted here; its time is checked after each step that took long, so a query
    // that ran past its limit fails naming it, and cancellation is seen between rows.
    const checkpoint = async () => {
      // A timer lets the clock move: a deployed object's clock stands still between I/O.
      await new Promise((resolve) => setTimeout(resolve, 0));
      const now = Date.now();
      lastCheck = now;
      if (now > deadline) throw limitStops.time(request.limits);
      if (now - lastCancelCheck < CANCEL_CHECK_MS) return;
      lastCancelCheck = now;
      if (await this.cancelled(request.queryId)) throw limitStops.cancelled();
    };
    await checkpoint();
    for (let row = cursor.first; row; row = next(cursor.rest)) {
      unquoteRow(row, values, classes);
      await writer.row(values, classes);
      if (writer.rowCount % CHECK_EVERY_ROWS === 0 || Date.now() - lastCheck >= CHECK_EVERY_MS) await checkpoint();
    }
    await checkpoint();
    return writer.finish();
  }

  /**
   * Starts the statement inside a transaction: its first step is where any
   * write would happen, so a statement that wrote rows is rolled back (by
   * the throw) and refused. Reads then go on outside the transaction.
   */
  private readOnlyCursor(sql: string, values: BoundValue[]): { first: unknown[] | null; rest: Iterator<unknown[]> } {
    return this.ctx.storage.transactionSync(() => {
      // Bound by position: a string as TEXT, a number as REAL, null as NULL (INTEGER values come as text, cast in the SQL).
      const cursor = this.ctx.storage.sql.exec(sql, ...values);
      const rest = cursor.raw();
      const first = next(rest);
      if (cursor.rowsWritten > 0)
        throw new Stop("Failed: Only read-only queries (SELECT, WITH … SELECT, VALUES) are allowed.");
      return { first, rest };
    });
  }

  private async cancelled(queryId: string): Promise<boolean> {
    try {
      const state = this.env.QUERY_STATE.get(this.env.QUERY_STATE.idFromName(queryId));
      return (await state.get())?.status === "cancelled";
    } catch {
      return false;
    }
  }
}

/** What the store keeps once built: the row count and the table that holds the rows. */
interface Built {
  rows: number;
  table: string;
}

/**
 * Checks a request as the engine would have made it, so a caller that
 * bypasses the engine cannot write or read beyond its tables: internal names
 * only, one statement, and none of SQLite's or the object's own tables.
 */
function refusal(request: StoreQuery): string | null {
  const aliases = [request.hostAlias, ...request.others.map((other) => other.alias)];
  if (!aliases.every((alias) => INTERNAL_NAME.test(alias))) return "Failed: the request names tables it may not.";
  if (hasMoreThanOneStatement(request.sql)) return "Failed: Only one statement is allowed.";
  const tokens = tokenize(request.sql);
  const internal = tokens.ok ? internalTableName(tokens.tokens) : null;
  if (!tokens.ok || internal) return `Failed: ${internal ?? "the query"} is not a data item.`;
  return null;
}

/** SQLite's message as sql.js gives it, without the Durable Object's " at offset 7: SQLITE_ERROR". */
function sqliteText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/( at offset \d+)?: SQLITE_[A-Z_]+$/, "");
}

/** A query's failure in words: SQLite's, or for the store's own limits, the limit and what to do. */
function sqliteMessage(error: unknown): string {
  const message = sqliteText(error);
  if (/^string or blob too big$/i.test(message))
    return "the query makes a value longer than a table store allows (2 MB; a blob counts twice, written as hex). Select shorter values";
  if (/^LIKE or GLOB pattern too complex$/i.test(message))
    return "a LIKE or GLOB pattern in a table store may be at most 50 bytes of UTF-8 (a Durable Object's limit). Use a shorter pattern, or instr() or substr() for a long literal";
  if (/^statement too long$/i.test(message))
    return "the query's text is longer than a table store takes (100 KB of UTF-8, as the store runs it). Shorten it";
  return storeLimitMessage(message) ?? message;
}

function next(cursor: Iterator<unknown[]>): unknown[] | null {
  const step = cursor.next();
  return step.done ? null : step.value;
}

/** A query's result, or what it uses of another item, wider than a store's SQLite allows. */
function tooManyColumns(count: number, of?: string): string {
  return of
    ? `Failed: a table store can bring in at most ${STORE_MAX_COLUMNS} columns of ${of} for a query; this one uses ${count}. Name fewer of its columns.`
    : `Failed: a query in a table store can return at most ${STORE_MAX_COLUMNS} columns; this one returns ${count}. Select fewer columns.`;
}

function storeFull(maxStoreBytes: number): Stop {
  return new Stop(
    `Failed: the table store would hold more than the limit of ${maxStoreBytes} bytes (TABLE_STORE_MAX_BYTES).`,
  );
}
