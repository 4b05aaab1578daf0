import type { Database } from "sql.js";
import { CsvRowReader, type ReadRows } from "../../ingest/csv-rows";
import type { StoredDataSchema } from "../../ingest/data-schema";
import { openUploadBytes } from "../../ingest/upload-bytes";
import { Utf8Text, type DecodedText } from "../../ingest/utf8-text";
import { toSqlValue, type DataTypeName } from "../../ingest/value-types";

/** The SQLite column type each data type is stored as (DECISIONS §5: BOOLEAN as 1/0, dates as ISO text). */
export const SQLITE_TYPE: Record<DataTypeName, string> = {
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
 * Streams a stored CSV (gzip decoded, header skipped) to `onRow`, one array
 * of fields per record. The file was checked at upload, so a field that does
 * not convert later is a bug, not a user error. Storage errors are thrown as
 * TransientError; anything else wrong with the file comes back as a message.
 */
export async function readStoredCsv(
  stream: ReadableStream<Uint8Array>,
  what: { name: string; options: StoredDataSchema["DataSpecification"]["DataOptions"] },
  guard: LoadGuard,
  onRow: (row: string[]) => void,
): Promise<LoadProgress> {
  const storageFailure = (error: unknown) =>
    new TransientError(`reading ${what.name} from storage failed: ${String(error)}`);
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
  const reader = new CsvRowReader(what.options.Delimiter, MAX_ROW_CHARS);
  let skipHeader = what.options.Header;
  let rows = 0;
  let loadedBytes = 0;
  let finished = false;

  const take = (read: ReadRows): string | null => {
    if (!read.ok) return `a row of ${what.name} is longer than ${MAX_ROW_CHARS} characters`;
    for (const row of read.rows) {
      if (skipHeader) {
        skipHeader = false;
        continue;
      }
      onRow(row);
      rows++;
    }
    return null;
  };
  const takeText = (decoded: DecodedText, last: boolean): string | null => {
    if (!decoded.ok) return `the stored file of ${what.name} is not valid UTF-8`;
    const problem = take(reader.push(decoded.text));
    return problem ?? (last ? take(reader.end()) : null);
  };

  try {
    for (;;) {
      const chunk = await read();
      if (chunk.kind === "bad-gzip")
        return { ok: false, message: `the stored file of ${what.name} cannot be decompressed` };
      if (chunk.kind === "end") break;
      loadedBytes += chunk.bytes.byteLength;
      const stop = guard(loadedBytes) ?? takeText(utf8.decode(chunk.bytes), false);
      if (stop) return { ok: false, message: stop };
    }
    finished = true;
    const problem = takeText(utf8.end(), true);
    if (problem) return { ok: false, message: problem };
    return { ok: true, rows, bytes: loadedBytes };
  } finally {
    if (!finished) await bytes.cancel();
  }
}

/** Streams a stored CSV into an existing table (see createTable), converting each needed field for its type. */
export async function loadTable(
  db: Database,
  table: TableToLoad,
  layout: { positions: number[]; types: DataTypeName[] },
  stream: ReadableStream<Uint8Array>,
  guard: LoadGuard,
): Promise<LoadProgress> {
  const { positions, types } = layout;
  const width = Math.max(positions.length, 1);
  const insert = db.prepare(
    `INSERT INTO ${quoteIdentifier(table.name)} VALUES (${Array.from({ length: width }, () => "?").join(", ")})`,
  );
  const values: ReturnType<typeof toSqlValue>[] = new Array(width).fill(null);
  let inTransaction = 0;
  try {
    const loaded = await readStoredCsv(
      stream,
      { name: table.name, options: table.schema.DataSpecification.DataOptions },
      guard,
      (row) => {
        if (inTransaction === 0) db.run("BEGIN");
        for (let i = 0; i < positions.length; i++) values[i] = toSqlValue(types[i]!, row[positions[i]!] ?? "");
        insert.run(values as (string | number | null)[]);
        if (++inTransaction === ROWS_PER_TRANSACTION) {
          db.run("COMMIT");
          inTransaction = 0;
        }
      },
    );
    if (loaded.ok && inTransaction > 0) {
      db.run("COMMIT");
      inTransaction = 0;
    }
    return loaded;
  } finally {
    if (inTransaction > 0) db.run("ROLLBACK");
    insert.free();
  }
}
