import type { Database, Statement } from "sql.js";
import type { DataTypeName } from "../../ingest/value-types";
import type { BoundValue } from "../sql/parameters";
import { StorageClass } from "../result/csv";
import { ResultWriter, type ResultTarget, type WrittenResult } from "../result/writer";
import { RunGuard } from "./run-guard";

/** How often (rows) the runner looks at the clock, the memory and cancellation while stepping. */
const CHECK_EVERY_ROWS = 4096;

/**
 * The statement to run: its SQL, the values bound to its `?K` placeholders, the result's column names, and
 * the data type each column may keep (declared-types.ts).
 */
export interface BoundStatement {
  sql: string;
  values: BoundValue[];
  names: string[];
  declared: (DataTypeName | null)[];
}

/**
 * Steps the one statement row by row into `target` through the shared
 * result writer; between rows the guard checks time, memory and cancellation.
 */
export async function executeStatement(
  db: Database,
  bound: BoundStatement,
  target: ResultTarget,
  guard: RunGuard,
  opened: () => void,
): Promise<WrittenResult> {
  const writer = new ResultWriter(bound.names, guard.limits, target, bound.declared);
  const classes: StorageClass[] = bound.names.map(() => StorageClass.Null);
  await stepRows(
    db,
    bound,
    guard,
    async () => {
      opened();
      await writer.header();
    },
    async (statement) => {
      // useBigInt tells INTEGER (bigint) from REAL (number) exactly, and keeps 64-bit integers whole.
      const values = (statement as unknown as RowGetter).get(null, { useBigInt: true });
      for (let i = 0; i < values.length; i++) classes[i] = storageClass(values[i]);
      await writer.row(values, classes);
    },
  );
  return writer.finish();
}

/** Steps the statement to its end, keeping no row; the guard's limits and cancellation apply as in executeStatement. */
export async function stepThrough(
  db: Database,
  bound: Pick<BoundStatement, "sql" | "values">,
  guard: RunGuard,
): Promise<void> {
  await stepRows(
    db,
    bound,
    guard,
    async () => {},
    async () => {},
  );
}

type RowGetter = { get(params: null, config: { useBigInt: boolean }): unknown[] };

/**
 * Prepares and binds the statement, runs `start`, then steps it to its end,
 * handing each row to `onRow` with the guard's checkpoint between rows, and
 * frees it.
 */
async function stepRows(
  db: Database,
  bound: Pick<BoundStatement, "sql" | "values">,
  guard: RunGuard,
  start: () => Promise<void>,
  onRow: (statement: Statement) => Promise<void>,
): Promise<void> {
  const statement = guard.stopOnSqliteError(() => db.prepare(bound.sql));
  try {
    // By position: sql.js binds a string as TEXT, a non-integer number as REAL, null as NULL.
    if (bound.values.length > 0) statement.bind(bound.values);
    await start();
    let rows = 0;
    while (guard.stopOnSqliteError(() => statement.step())) {
      await onRow(statement);
      await guard.checkpoint(db, ++rows % CHECK_EVERY_ROWS === 0);
    }
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
