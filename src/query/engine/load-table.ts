import type { Database } from "sql.js";
import { CsvRowReader, type ReadRows } from "../../ingest/csv-rows";
import type { StoredDataSchema } from "../../ingest/data-schema";
import { openUploadBytes } from "../../ingest/upload-bytes";
import { Utf8Text, type DecodedText } from "../../ingest/utf8-text";
import { toSqlValue, type DataTypeName } from "../../ingest/value-types";

/** The SQLite column type each data type is stored as (DECISIONS §5: BOOLEAN as 1/0, dates as ISO text). */
const SQLITE_TYPE: Record<DataTypeName, string> = {
  STRING: "TEXT",
  INTEGER: "INTEGER",
  DOUBLE: "REAL",
  BOOLEAN: "INTEGER",
  DATE: "TEXT",
  TIMESTAMP: "TEXT",
};

/** Rows are inserted in transactions of this many, so one huge transaction does not grow the journal. */
const ROWS_PER_TRANSACTION = 50_000;
const MAX_ROW_CHARS = 8 * 1024 * 1024;

/** A failure of storage, not of the query: the run may be retried. */
export class TransientError extends Error {
  override name = "TransientError";
}

/** `"name"` with inner quotes doubled: any column name is safe in SQL. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A table to create and fill: its internal name, the stored schema, and which columns the query needs. */
export interface TableToLoad {
  name: string;
  schema: StoredDataSchema;
  /** Column names (as in the schema) to load; null loads every column. */
  columns: ReadonlySet<string> | null;
}

/** Creates the table with only the needed columns, typed per the schema; returns their positions in the file. */
export function createTable(db: Database, table: TableToLoad): { positions: number[]; types: DataTypeName[] } {
  const all = table.schema.TableDefinition.Columns;
  const wanted = table.columns;
  const positions: number[] = [];
  const definitions: string[] = [];
  const types: DataTypeName[] = [];
  all.forEach((column, index) => {
    if (wanted && !wanted.has(column.Name.toLowerCase())) return;
    positions.push(index);
    types.push(column.DataType.DataType);
    definitions.push(`${quoteIdentifier(column.Name)} ${SQLITE_TYPE[column.DataType.DataType]}`);
  });
  // A query that names no column of a table (SELECT count(*) FROM t) still needs its rows.
  if (definitions.length === 0) definitions.push(`"__row" INTEGER`);
  db.run(`CREATE TABLE ${quoteIdentifier(table.name)} (${definitions.join(", ")})`);
  return { positions, types };
}

export type LoadProgress = { ok: true; rows: number; bytes: number } | { ok: false; message: string };

/** Checked between batches: returns a message to stop loading with, or null to go on. */
export type LoadGuard = (bytesSoFar: number) => string | null;

/**
 * Streams a stored CSV (gzip decoded) into an existing table, converting
 * each needed field for its type. The file was checked at upload, so a
 * field that does not convert here is a bug, not a user error.
 */
export async function loadTable(
  db: Database,
  table: TableToLoad,
  layout: { positions: number[]; types: DataTypeName[] },
  stream: ReadableStream<Uint8Array>,
  guard: LoadGuard,
): Promise<LoadProgress> {
  const options = table.schema.DataSpecification.DataOptions;
  const storageFailure = (error: unknown) =>
    new TransientError(`reading ${table.name} from storage failed: ${String(error)}`);
  // Opening reads the first bytes (to tell gzip from CSV), so a storage error can already happen here.
  const bytes = await openUploadBytes(stream).catch((error: unknown) => {
    throw storageFailure(error);
  });
  const read = async () => {
    try {
      return await bytes.read();
    } catch (error) {
      throw storageFailure(error);
    }
  };
  const utf8 = new Utf8Text();
  const reader = new CsvRowReader(options.Delimiter, MAX_ROW_CHARS);
  const { positions, types } = layout;
  const width = Math.max(positions.length, 1);
  const insert = db.prepare(
    `INSERT INTO ${quoteIdentifier(table.name)} VALUES (${Array.from({ length: width }, () => "?").join(", ")})`,
  );
  const values: ReturnType<typeof toSqlValue>[] = new Array(width).fill(null);
  let skipHeader = options.Header;
  let rows = 0;
  let loadedBytes = 0;
  let inTransaction = 0;
  let finished = false;

  const insertRows = (read: ReadRows): string | null => {
    if (!read.ok) return `a row of ${table.name} is longer than ${MAX_ROW_CHARS} characters`;
    for (const row of read.rows) {
      if (skipHeader) {
        skipHeader = false;
        continue;
      }
      if (inTransaction === 0) db.run("BEGIN");
      for (let i = 0; i < positions.length; i++) values[i] = toSqlValue(types[i]!, row[positions[i]!] ?? "");
      insert.run(values as (string | number | null)[]);
      rows++;
      if (++inTransaction === ROWS_PER_TRANSACTION) {
        db.run("COMMIT");
        inTransaction = 0;
      }
    }
    return null;
  };
  const takeText = (decoded: DecodedText, last: boolean): string | null => {
    if (!decoded.ok) return `the stored file of ${table.name} is not valid UTF-8`;
    const problem = insertRows(reader.push(decoded.text));
    return problem ?? (last ? insertRows(reader.end()) : null);
  };

  try {
    for (;;) {
      const chunk = await read();
      if (chunk.kind === "bad-gzip")
        return { ok: false, message: `the stored file of ${table.name} cannot be decompressed` };
      if (chunk.kind === "end") break;
      loadedBytes += chunk.bytes.byteLength;
      const stop = guard(loadedBytes) ?? takeText(utf8.decode(chunk.bytes), false);
      if (stop) return { ok: false, message: stop };
    }
    finished = true;
    const problem = takeText(utf8.end(), true);
    if (problem) return { ok: false, message: problem };
    if (inTransaction > 0) db.run("COMMIT");
    inTransaction = 0;
    return { ok: true, rows, bytes: loadedBytes };
  } finally {
    if (inTransaction > 0) db.run("ROLLBACK");
    insert.free();
    if (!finished) await bytes.cancel();
  }
}
