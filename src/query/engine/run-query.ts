import type { Database } from "sql.js";
import type { QueryLimits } from "../../config";
import type { StoredDataSchema } from "../../ingest/data-schema";
import type { ResultColumn } from "../query-record";
import { checkReadOnly } from "../sql/read-only";
import { columnsUsed, rewriteTableNames, type DataItemReference } from "../sql/table-names";
import { tokenize, type Token } from "../sql/tokenizer";
import { retireIfGrown, sqliteInstanceFor } from "../sqlite";
import { guardStatements } from "../sqlite-guard";
import { AttachedImages } from "./attach-images";
import { createSlotsTable, type ColumnImages } from "./column-images";
import { executeStatement, type ResultTarget } from "./execute-statement";
import { createTable, loadTable, TransientError, type TableToLoad } from "./load-table";
import {
  MAX_VALUE_BYTES,
  PROGRESS_EVERY_STEPS,
  RunGuard,
  Stop,
  transient,
  type RunControl,
  type RunStats,
} from "./run-guard";

export type { ResultTarget } from "./execute-statement";
export { MAX_VALUE_BYTES, VM_STEPS_PER_SECOND, type RunControl, type RunStats } from "./run-guard";

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

export type EngineOutcome =
  | ({ ok: true; rowCount: number; size: number; columns: ResultColumn[] } & RunStats)
  | ({ ok: false; cancelled: boolean; message: string } & RunStats);

type Io = { source: QuerySource; target: ResultTarget; control: RunControl };

/** The data items a query names, found in the catalog, in the order of its references. */
type Resolved = { sql: string; references: (DataItemReference & { alias: string })[]; items: LoadableItem[] };

/** How each named item gets into the database: its table (with the columns the query uses) and whence it loads. */
interface Plan {
  tokens: Token[] | null;
  tables: { table: TableToLoad; fromImages: boolean }[];
}

/**
 * Runs one query in phases: resolve its data item names through `source`,
 * plan (which columns, from column images or the CSV), refuse anything but
 * one read-only statement on the empty tables, load, then step the result
 * row by row into `target`. Every limit stops it with a message naming it;
 * time (as work done) and memory are checked inside a statement too
 * (sqlite-guard.ts), cancellation between rows. The database is always
 * closed, and an instance whose heap the query grew by more than a quarter
 * of the budget is retired, so the next query starts on a clean heap.
 */
export async function runQuery(
  sql: string,
  io: Io,
  limits: QueryLimits,
  clock: () => number = Date.now,
): Promise<EngineOutcome> {
  const stats: RunStats = { bytesLoaded: 0, peakMemoryBytes: 0, loadMs: 0, executeMs: 0, writeMs: 0 };
  const instance = await sqliteInstanceFor(limits.memoryBudgetBytes);
  const guard = new RunGuard(instance, limits, clock, io.control, stats);
  const images = new AttachedImages(instance, guard, (key) => io.source.openImage(key), io.control);
  const failed = (message: string, cancelled = false): EngineOutcome => ({ ok: false, cancelled, message, ...stats });
  let db: Database | null = null;
  let unguard: (() => void) | null = null;
  let targetOpen = false;
  // Messages speak of the data items as the user named them, not of the internal tables.
  let userFacing = (message: string) => message;
  try {
    const resolved = await resolve(sql, io.source);
    if (!resolved.ok) return failed(resolved.message);
    userFacing = namingAsTheUserDid(resolved.references);
    db = new instance.sql.Database();
    unguard = guardStatements(instance, db, {
      maxValueBytes: MAX_VALUE_BYTES,
      everySteps: PROGRESS_EVERY_STEPS,
      onProgress: guard.onProgress,
    });
    const plan = planTables(resolved);
    const created = plan.tables.map(({ table }) => createTable(db!, table));
    // Checked on the empty tables, before anything is loaded: a refused query costs nothing.
    const readOnly = checkReadOnly(db, resolved.sql);
    if (!readOnly.ok) return failed(userFacing(`Failed: ${readOnly.message}.`));
    await load(db, resolved, plan, created, { guard, images, io });
    await io.control.progress("Running: executing the query.");
    const executeStarted = clock();
    guard.measure(db);
    const result = await executeStatement(db, resolved.sql, io.target, guard, () => (targetOpen = true));
    stats.executeMs = clock() - executeStarted - result.writeMs;
    stats.writeMs = result.writeMs;
    return { ok: true, rowCount: result.rowCount, size: result.size, columns: result.columns, ...stats };
  } catch (caught) {
    if (targetOpen) await io.target.abort();
    const error = caught instanceof TransientError ? caught : (guard.limitReached(caught) ?? caught);
    if (error instanceof Stop) return failed(userFacing(error.message), error.cancelled);
    if (error instanceof TransientError) throw error;
    // SQLite's own errors (too many columns, out of memory, …) and anything unforeseen end the query for good.
    return failed(userFacing(`Failed: ${error instanceof Error ? error.message : String(error)}.`));
  } finally {
    unguard?.();
    db?.close();
    images.close();
    retireIfGrown(instance, limits.memoryBudgetBytes / 4);
  }
}

/** Rewrites the data item names to internal tables and finds each item; a missing or unreadable one fails. */
async function resolve(
  sql: string,
  source: QuerySource,
): Promise<({ ok: true } & Resolved) | { ok: false; message: string }> {
  const names = rewriteTableNames(sql);
  if (!names.ok) return { ok: false, message: `Failed: ${names.message}` };
  const items: LoadableItem[] = [];
  for (const reference of names.tables) {
    const item = await transient("reading the catalog", () => source.find(reference));
    if (!item)
      return {
        ok: false,
        message: `Failed: table ${reference.account}.${reference.dataset}.${reference.data} does not exist, or you may not read it.`,
      };
    items.push(item);
  }
  return { ok: true, sql: names.sql, references: names.tables, items };
}

/** Turns internal table names in a message back into the three-part names the user wrote. */
function namingAsTheUserDid(references: Resolved["references"]): (message: string) => string {
  const names = references.map((t) => ({ alias: t.alias, name: `${t.account}.${t.dataset}.${t.data}` }));
  return (message) =>
    names.reduce((text, { alias, name }) => text.replace(new RegExp(`\\b${alias}\\b`, "g"), name), message);
}

/**
 * Decides, before anything is loaded, which columns of each item the query
 * uses, and whether they come from column images (where built, as long as
 * they fit the attach limit) or from the CSV.
 */
function planTables(resolved: Resolved): Plan {
  const tokens = tokenize(resolved.sql);
  const tableColumns = new Map(
    resolved.references.map((reference, i) => [
      reference.alias,
      resolved.items[i]!.schema.TableDefinition.Columns.map((c) => c.Name),
    ]),
  );
  const used = tokens.ok ? columnsUsed(tokens.tokens, tableColumns) : new Map();
  let attachLeft = MAX_ATTACHED;
  const tables = resolved.references.map((reference, i) => {
    const item = resolved.items[i]!;
    const selection = used.get(reference.alias) ?? "all";
    const columns = selection === "all" ? null : new Set([...selection].map((name: string) => name.toLowerCase()));
    const needed = Math.max(1, columns?.size ?? item.schema.TableDefinition.Columns.length);
    const fromImages = item.images !== null && needed <= attachLeft;
    if (fromImages) attachLeft -= needed;
    return { table: { name: reference.alias, schema: item.schema, columns }, fromImages };
  });
  return { tokens: tokens.ok ? tokens.tokens : null, tables };
}

/** Loads each planned table (images attached, or CSV rows inserted), then makes the database read-only. */
async function load(
  db: Database,
  resolved: Resolved,
  plan: Plan,
  created: ReturnType<typeof createTable>[],
  run: { guard: RunGuard; images: AttachedImages; io: Io },
): Promise<void> {
  const { guard, images, io } = run;
  const { stats, limits, clock } = guard;
  db.run("PRAGMA query_only = 0");
  const loadStarted = clock();
  if (plan.tables.some((t) => t.fromImages)) createSlotsTable(db);
  for (const [i, { table, fromImages }] of plan.tables.entries()) {
    const reference = resolved.references[i]!;
    await io.control.progress(`Running: loading ${reference.account}.${reference.dataset}.${reference.data}.`);
    if (fromImages) {
      await images.attach(db, table, resolved.items[i]!.images!, reference.data);
      continue;
    }
    const stream = await transient("opening a data item", () => io.source.open(resolved.items[i]!));
    if (!stream) throw new Stop(`Failed: the data of ${reference.data} was deleted while the query ran.`);
    const before = stats.bytesLoaded;
    const loaded = await loadTable(db, table, created[i]!, stream, (bytes) => {
      stats.bytesLoaded = before + bytes;
      stats.loadMs = clock() - loadStarted;
      if (stats.bytesLoaded > limits.maxLoadBytes) return guard.overLoadLimit().message;
      if (guard.timeIsUp()) return guard.overTimeLimit(" while loading").message;
      guard.measure(db);
      return null;
    });
    if (!loaded.ok)
      throw new Stop(loaded.message.startsWith("Failed:") ? loaded.message : `Failed: ${loaded.message}.`);
    stats.bytesLoaded = before + loaded.bytes;
    guard.measure(db);
  }
  // A view has no rowid; a table copied from it in file order numbers its rows as a loaded table would.
  const namesRowid = (plan.tokens ?? []).some((t) => t.kind === "identifier" && /^(rowid|oid|_rowid_)$/i.test(t.value));
  await images.tablesInsteadOfViews(db, resolved.sql, namesRowid);
  stats.loadMs = clock() - loadStarted;
  guard.loading = false;
  db.run("PRAGMA query_only = 1");
}
