import type { Database } from "sql.js";
import type { DataTypeName } from "../../ingest/value-types";
import type { ResultColumn } from "../query-record";
import { csvField, CsvResultWriter, StorageClass } from "./csv-result";
import { RunGuard, Stop, transient } from "./run-guard";

/** Where the result CSV goes, as it is produced. */
export interface ResultTarget {
  write(bytes: Uint8Array): Promise<void>;
  finish(): Promise<void>;
  abort(): Promise<void>;
}

/** How often (rows) the runner looks at the clock, the memory and cancellation while stepping. */
const CHECK_EVERY_ROWS = 4096;

/**
 * Steps the one statement row by row into `target` as CSV, typing each
 * result column by the values it held, and stops at the result limits;
 * between rows the guard checks time, memory and cancellation.
 */
export async function executeStatement(
  db: Database,
  sql: string,
  target: ResultTarget,
  guard: RunGuard,
  opened: () => void,
): Promise<{ rowCount: number; size: number; columns: ResultColumn[]; writeMs: number }> {
  const { limits } = guard;
  let writeMs = 0;
  const timedWrite = async (bytes: Uint8Array) => {
    const t = Date.now();
    await transient("writing the result", () => target.write(bytes));
    writeMs += Date.now() - t;
  };
  const statement = guard.sqlite(() => db.prepare(sql));
  const row = statement as unknown as { get(params: null, config: { useBigInt: boolean }): unknown[] };
  try {
    const names = statement.getColumnNames();
    const seen: Set<StorageClass>[] = names.map(() => new Set());
    const writer = new CsvResultWriter(timedWrite);
    opened();
    await writer.header(names);
    let rowCount = 0;
    while (guard.sqlite(() => statement.step())) {
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
      await guard.checkpoint(db, rowCount % CHECK_EVERY_ROWS === 0);
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
