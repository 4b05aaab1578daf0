import type { DataTypeName } from "../../ingest/value-types";
import { withTypedNulls, type Parameters } from "../sql/parameters";
import type { Token } from "../sql/tokenizer";
import type { Database } from "../sqlite";
import { statementBody } from "../store/store-sql";
import { SQLITE_TYPE } from "../table-layout";

const VIEW = `temp."__dqs_columns"`;
/** The data types whose declared SQLite type names them (table-layout.ts), by that declared type. */
const BY_DECLARED_TYPE = new Map<string, DataTypeName>(
  (["BOOLEAN", "DATE", "TIMESTAMP"] as const).map((type) => [SQLITE_TYPE[type], type]),
);

/**
 * The declared type SQLite gives each result column of the checked query,
 * on the empty tables, without running it: a view over the query declares
 * a column that is a plain reference to a data item's column (also through
 * subqueries, common table expressions, joins and the first SELECT of a
 * compound) with that column's declared type, a CAST or a parameter with
 * its own type, anything else with none (""); PRAGMA table_info reads them
 * (sqlite3_column_decltype, which sql.js does not export). A view may hold
 * no placeholder, so each stands as a NULL of its value's type. Empty when
 * SQLite cannot hold the query in a view.
 */
export function declaredColumnTypes(
  db: Database,
  tokens: readonly Token[] | null,
  parameters: Parameters | null,
): string[] {
  const typed = tokens && withTypedNulls(tokens, parameters);
  if (!typed?.ok) return [];
  // The query was checked to be one read-only statement; the view is written only to this connection's temp schema.
  db.run("PRAGMA query_only = 0");
  try {
    // Only the first statement of the text is prepared.
    const create = db.prepare(`CREATE VIEW ${VIEW} AS ${statementBody(typed.sql)}`);
    try {
      create.step();
    } finally {
      create.free();
    }
    const info = db.exec(`PRAGMA temp.table_info("__dqs_columns")`)[0];
    db.run(`DROP VIEW ${VIEW}`);
    return (info?.values ?? []).map((row) => String(row[2] ?? ""));
  } catch {
    return [];
  } finally {
    db.run("PRAGMA query_only = 1");
  }
}

/**
 * The BOOLEAN, DATE or TIMESTAMP type of a data item column declared as
 * `declared` (table-layout.ts declares them by name), else null: a result
 * column taken straight from one keeps that type while its values fit it
 * (result/writer.ts), the same in either engine, since this runs on the
 * empty tables before either does.
 */
export function keptDataType(declared: string): DataTypeName | null {
  return BY_DECLARED_TYPE.get(declared) ?? null;
}
