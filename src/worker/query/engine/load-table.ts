import type { Database } from "sql.js";
import { toSqlValue, type DataTypeName } from "../../ingest/value-types";
import { readStoredCsv, type LoadGuard, type LoadProgress } from "../stored-csv";
import { quoteIdentifier, selectColumns, type TableLayout } from "../table-layout";

/** Rows are inserted in transactions of this many, so one huge transaction does not grow the journal. */
const ROWS_PER_TRANSACTION = 50_000;

/** A table to create and fill: its internal name, the item's layout, and which columns the query needs. */
export interface TableToLoad {
  name: string;
  layout: TableLayout;
  /** Column names (lower case) to load; null loads every column. */
  columns: ReadonlySet<string> | null;
}

/** Creates the table with only the needed columns, typed per the layout; returns their positions in the file. */
export function createTable(db: Database, table: TableToLoad): { positions: number[]; types: DataTypeName[] } {
  const { positions, types, definitions } = selectColumns(table.layout, table.columns);
  db.run(`CREATE TABLE ${quoteIdentifier(table.name)} (${definitions.join(", ")})`);
  return { positions, types };
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
    const loaded = await readStoredCsv(stream, { name: table.name, layout: table.layout }, guard, (row) => {
      if (inTransaction === 0) db.run("BEGIN");
      for (let i = 0; i < positions.length; i++) values[i] = toSqlValue(types[i]!, row[positions[i]!] ?? null);
      insert.run(values as (string | number | null)[]);
      if (++inTransaction === ROWS_PER_TRANSACTION) {
        db.run("COMMIT");
        inTransaction = 0;
      }
    });
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
