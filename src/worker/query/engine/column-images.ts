import type { Database, SqlJsStatic } from "sql.js";
import { toSqlValue, type DataTypeName } from "../../ingest/value-types";
import { quoteIdentifier, SQLITE_TYPE, type TableLayout } from "../table-layout";

/**
 * The query-ready form of a data item (issue 6): next to the raw CSV, which
 * stays the source of truth, one SQLite database image per column, built once
 * after the upload. A query attaches the images of the columns it uses and
 * reads them through a view, so it parses no CSV and binds no value.
 *
 * Each image holds one table `c` whose records carry VALUES_PER_RECORD
 * consecutive values of the column (v0 … v15; the last record padded with
 * NULL): SQLite spends about 8 bytes of cell header, rowid and pointer on
 * every record, which on one value per record would double the image of a
 * narrow column. Record r of every column's image holds rows
 * r·16 … r·16+15 of the file, so the view joins the images on rowid (a
 * cursor step, not a search, when rowids come in order) and unpacks the
 * slots with a small `slots` table, in file order.
 */
export const VALUES_PER_RECORD = 16;
export const IMAGE_FORMAT = 1;

/** What the catalog records once a version's images are stored (data_items.column_images, JSON). */
export interface ColumnImages {
  format: typeof IMAGE_FORMAT;
  valuesPerRecord: number;
  rows: number;
  /** In the schema's column order. */
  columns: { key: string; bytes: number }[];
}

/** The recorded images, or null when none are usable (not built yet, or another format). */
export function parseColumnImages(json: string | null | undefined, columnCount: number): ColumnImages | null {
  if (!json) return null;
  try {
    const parsed = JSON.parse(json) as ColumnImages;
    if (parsed.format !== IMAGE_FORMAT || parsed.valuesPerRecord !== VALUES_PER_RECORD) return null;
    if (!Array.isArray(parsed.columns) || parsed.columns.length !== columnCount) return null;
    return parsed;
  } catch {
    return null;
  }
}

const SLOTS_TABLE = `temp."__dqs_slots"`;
const slotNames = Array.from({ length: VALUES_PER_RECORD }, (_, i) => `v${i}`);

/**
 * One column's image under construction: values go in one at a time, in
 * file order, typed as the upload checked them; `finish` returns the image.
 */
export class ColumnImageBuilder {
  private readonly db: Database;
  private readonly insert: ReturnType<Database["prepare"]>;
  private readonly values: (string | number | null)[] = new Array(VALUES_PER_RECORD).fill(null);
  private filled = 0;
  private records = 0;

  constructor(
    sql: SqlJsStatic,
    private readonly type: DataTypeName,
  ) {
    this.db = new sql.Database();
    try {
      // The image is written once and only read afterwards: no journal, and a transaction per batch of records.
      this.db.run("PRAGMA journal_mode = OFF");
      // The default 4 KiB pages: larger ones barely shrink an image but grow its page cache once attached,
      // in a WebAssembly heap that never shrinks.
      this.db.run(`CREATE TABLE c (${slotNames.map((name) => `${name} ${SQLITE_TYPE[type]}`).join(", ")})`);
      this.insert = this.db.prepare(`INSERT INTO c VALUES (${slotNames.map(() => "?").join(", ")})`);
      this.db.run("BEGIN");
    } catch (error) {
      this.db.close();
      throw error;
    }
  }

  /** Adds the next value of the column, as it appears in the file (null: an unquoted empty field). */
  add(field: string | null): void {
    this.values[this.filled++] = toSqlValue(this.type, field) as string | number | null;
    if (this.filled === VALUES_PER_RECORD) this.flush();
  }

  /** Bytes the image occupies so far (its pages, in sql.js's in-memory file system). */
  bytes(): number {
    const result = this.db.exec("PRAGMA page_count; PRAGMA page_size");
    return Number(result[0]?.values[0]?.[0] ?? 0) * Number(result[1]?.values[0]?.[0] ?? 0);
  }

  /** The finished image; the builder is closed afterwards. */
  finish(): Uint8Array {
    try {
      if (this.filled > 0) {
        this.values.fill(null, this.filled);
        this.flush();
      }
      this.db.run("COMMIT");
      this.insert.free();
      return this.db.export();
    } finally {
      this.db.close();
    }
  }

  /** Frees the builder without an image (a failed build). */
  discard(): void {
    try {
      this.insert.free();
    } finally {
      this.db.close();
    }
  }

  private flush(): void {
    this.insert.run(this.values);
    this.filled = 0;
    if (++this.records % 50_000 === 0) this.db.run("COMMIT; BEGIN");
  }
}

/** One column of a data item, attached as a schema of its own. */
export interface AttachedColumn {
  name: string;
  type: DataTypeName;
  schema: string;
}

/** Creates the table of slot numbers the views unpack records with (once per database). */
export function createSlotsTable(db: Database): void {
  db.run(`CREATE TABLE ${SLOTS_TABLE} (i INTEGER PRIMARY KEY)`);
  db.run(`INSERT INTO ${SLOTS_TABLE} VALUES ${slotNames.map((_, i) => `(${i})`).join(", ")}`);
}

/**
 * A temporary view named `viewName` over attached column images: one row per
 * row of the file, in file order, with the schema's column names and types
 * (CAST gives each column the affinity a loaded table's declared type would,
 * so comparisons behave alike). `driver` is the attached image that supplies
 * the rows when the query uses no column (SELECT count(*)). LIMIT -1 keeps
 * SQLite from flattening the view into the query: flattened, a GROUP BY
 * would sort every slot of every record instead of the one value it needs.
 */
export function createImageView(
  db: Database,
  viewName: string,
  columns: AttachedColumn[],
  driver: string,
  rows: number,
): void {
  const schemas = columns.length > 0 ? columns.map((c) => c.schema) : [driver];
  const from = schemas.map((schema, i) => `${i === 0 ? "" : "CROSS JOIN "}${quoteIdentifier(schema)}.c AS k${i}`);
  const select = columns.map((column, i) => {
    const pick = slotNames.map((slot, s) => `WHEN ${s} THEN k${i}.${slot}`).join(" ");
    return `CAST(CASE s.i ${pick} END AS ${SQLITE_TYPE[column.type]}) AS ${quoteIdentifier(column.name)}`;
  });
  if (select.length === 0) select.push(`NULL AS "__row"`);
  const where = [
    ...schemas.slice(1).map((_, i) => `k${i + 1}.rowid = k0.rowid`),
    `(k0.rowid - 1) * ${VALUES_PER_RECORD} + s.i < ${rows}`,
  ];
  db.run(
    `CREATE TEMP VIEW ${quoteIdentifier(viewName)} AS SELECT ${select.join(", ")}
     FROM ${from.join(" ")} CROSS JOIN ${SLOTS_TABLE} AS s WHERE ${where.join(" AND ")} LIMIT -1`,
  );
}

/** Estimated bytes of each column's image, from the file's size and the columns' types, to plan build passes. */
export function estimateImageBytes(layout: TableLayout, csvBytes: number, rows: number): number[] {
  const columns = layout.columns;
  const fixed: Partial<Record<DataTypeName, number>> = { INTEGER: 9, DOUBLE: 9, BOOLEAN: 2, DATE: 11 };
  const perRow = rows > 0 ? csvBytes / rows : 0;
  const fixedTotal = columns.reduce((sum, c) => sum + (fixed[c.type] ?? 0), 0);
  const flexible = columns.filter((c) => fixed[c.type] === undefined).length;
  const flexibleWidth = flexible > 0 ? Math.max(8, (perRow - fixedTotal) / flexible) : 0;
  // Record overhead per value (about 8 bytes per record of 16) and page slack.
  return columns.map((c) => Math.ceil(rows * ((fixed[c.type] ?? flexibleWidth) + 1) * 1.1));
}

/** Groups column indexes into passes whose estimated images fit `budget` together (each pass reads the file once). */
export function planPasses(estimates: number[], budget: number): number[][] {
  const passes: number[][] = [];
  let current: number[] = [];
  let sum = 0;
  estimates.forEach((bytes, index) => {
    if (current.length > 0 && sum + bytes > budget) {
      passes.push(current);
      current = [];
      sum = 0;
    }
    current.push(index);
    sum += bytes;
  });
  if (current.length > 0) passes.push(current);
  return passes;
}
