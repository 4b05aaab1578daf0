import { toSqlValue } from "../../ingest/value-types";
import { readStoredCsv, type LoadGuard, type LoadProgress } from "../stored-csv";
import { quoteIdentifier, selectColumns, type TableLayout } from "../table-layout";

/** A Durable Object's SQL statement may be at most 100 KB and bind at most 100 values. */
const MAX_STATEMENT_CHARS = 90_000;
const MAX_BOUND_VALUES = 100;
/** Longer values are bound, not written into the statement as literals. */
const MAX_LITERAL_CHARS = 2_000;
/** Rows are committed in transactions of about this many. */
const ROWS_PER_TRANSACTION = 10_000;

/** The SQL storage of one Durable Object, and its transactions. */
export interface StoreSql {
  sql: SqlStorage;
  transactionSync<T>(run: () => T): T;
}

/**
 * Creates `table` with the columns a query or the store needs (all: null)
 * and fills it from a stored CSV, typed as the sql.js loader types them
 * (toSqlValue), in file order, so rowids number the rows as sql.js does.
 * Rows go in as multi-row INSERTs with the values written as SQL literals
 * (a statement binds at most 100 values, so binding would allow a few rows
 * a statement), committed every ROWS_PER_TRANSACTION rows. A row whose
 * statement would still be too long as literals has its text values bound.
 */
export async function fillTable(
  store: StoreSql,
  table: string,
  source: { name: string; layout: TableLayout; stream: ReadableStream<Uint8Array> },
  wanted: ReadonlySet<string> | null,
  guard: LoadGuard,
): Promise<LoadProgress> {
  const { positions, types, definitions } = selectColumns(source.layout, wanted);
  store.sql.exec(`CREATE TABLE ${quoteIdentifier(table)} (${definitions.join(", ")})`);
  const inserts = new InsertBatcher(store, `INSERT INTO ${quoteIdentifier(table)} VALUES `);
  const tupleOf = (row: (string | null)[], maxLiteralChars: number, bound: unknown[]): string => {
    let tuple = "(";
    for (let i = 0; i < positions.length; i++) {
      if (i > 0) tuple += ",";
      tuple += literal(toSqlValue(types[i]!, row[positions[i]!] ?? null), bound, maxLiteralChars);
    }
    return tuple + ")";
  };
  const loaded = await readStoredCsv(source.stream, { name: source.name, layout: source.layout }, guard, (row) => {
    if (positions.length === 0) return inserts.add("(NULL)", []);
    let bound: unknown[] = [];
    let tuple = tupleOf(row, MAX_LITERAL_CHARS, bound);
    // Too long for one statement as literals: every text value is bound (a table has at most 100 columns).
    if (tuple.length > MAX_STATEMENT_CHARS) tuple = tupleOf(row, 0, (bound = []));
    inserts.add(tuple, bound);
  });
  if (loaded.ok) inserts.commit();
  return loaded;
}

/** Collects row tuples into statements within the store's limits, and commits them in transactions. */
class InsertBatcher {
  private tuples: string[] = [];
  private chars = 0;
  private bound: unknown[] = [];
  private statements: { text: string; bound: unknown[] }[] = [];
  private rows = 0;

  constructor(
    private readonly store: StoreSql,
    private readonly prefix: string,
  ) {}

  add(tuple: string, bound: unknown[]): void {
    if (
      this.tuples.length > 0 &&
      (this.chars + tuple.length > MAX_STATEMENT_CHARS || this.bound.length + bound.length > MAX_BOUND_VALUES)
    )
      this.endStatement();
    this.tuples.push(tuple);
    this.chars += tuple.length + 1;
    for (const value of bound) this.bound.push(value);
    if (++this.rows >= ROWS_PER_TRANSACTION) this.commit();
  }

  /** Writes every collected row in one transaction. */
  commit(): void {
    this.endStatement();
    const statements = this.statements;
    this.statements = [];
    this.rows = 0;
    if (statements.length === 0) return;
    this.store.transactionSync(() => {
      for (const statement of statements) this.store.sql.exec(statement.text, ...statement.bound);
    });
  }

  private endStatement(): void {
    if (this.tuples.length === 0) return;
    this.statements.push({ text: this.prefix + this.tuples.join(","), bound: this.bound });
    this.tuples = [];
    this.chars = 0;
    this.bound = [];
  }
}

/**
 * A typed value as an SQL literal, or `?` with the value added to `bound`
 * (long text). The column's affinity stores it as the sql.js loader's bound
 * value would be stored: a whole DOUBLE written as `5` becomes REAL 5.0.
 */
function literal(value: ReturnType<typeof toSqlValue>, bound: unknown[], maxLiteralChars: number): string {
  if (value === null) return "NULL";
  if (typeof value === "string") {
    if (value.length > maxLiteralChars || value.includes("\0")) {
      bound.push(value);
      return "?";
    }
    return value.includes("'") ? `'${value.replace(/'/g, "''")}'` : `'${value}'`;
  }
  if (typeof value === "bigint") return value.toString();
  if (Number.isFinite(value)) return String(value);
  // sql.js binds NaN as NULL; the infinities have no literal of their own.
  if (Number.isNaN(value)) return "NULL";
  return value > 0 ? "9e999" : "-9e999";
}
