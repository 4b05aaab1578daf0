import type { StoredDataSchema } from "../ingest/data-schema";
import type { DataTypeName } from "../ingest/value-types";

/** One column of a stored data item, as the engines see it. */
export interface ColumnLayout {
  name: string;
  type: DataTypeName;
}

/** How a stored data item's CSV is laid out: its columns in file order and how to read it. */
export interface TableLayout {
  columns: ColumnLayout[];
  delimiter: string;
  header: boolean;
}

/** The catalog's wire schema, parsed once into the layout the engines use. */
export function tableLayout(schema: StoredDataSchema): TableLayout {
  const { Delimiter, Header } = schema.DataSpecification.DataOptions;
  return {
    columns: schema.TableDefinition.Columns.map((column) => ({ name: column.Name, type: column.DataType.DataType })),
    delimiter: Delimiter,
    header: Header,
  };
}

/** The layout of a catalog row's schema column (JSON). */
export function parseTableLayout(schemaJson: string): TableLayout {
  return tableLayout(JSON.parse(schemaJson) as StoredDataSchema);
}

/**
 * The SQLite column type each data type is declared as (docs/api.md: BOOLEAN as 1/0, dates as text).
 * BOOLEAN, DATE and TIMESTAMP lead with their own name, so a result column's declared type tells which
 * one it comes from (engine/declared-types.ts); the word after it gives SQLite the affinity.
 */
export const SQLITE_TYPE: Record<DataTypeName, string> = {
  STRING: "TEXT",
  INTEGER: "INTEGER",
  DOUBLE: "REAL",
  BOOLEAN: "BOOLEAN INTEGER",
  DATE: "DATE TEXT",
  TIMESTAMP: "TIMESTAMP TEXT",
};

/** `"name"` with inner quotes doubled: any column name is safe in SQL. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * The columns of `layout` a query needs (`wanted`: lower-case names, null
 * for all), with their positions in the file, and the SQL that declares them.
 * A query that names no column of a table (SELECT count(*) FROM t) still
 * needs its rows: it gets one placeholder column.
 */
export function selectColumns(
  layout: TableLayout,
  wanted: ReadonlySet<string> | null,
): { positions: number[]; types: DataTypeName[]; definitions: string[] } {
  const positions: number[] = [];
  const types: DataTypeName[] = [];
  const definitions: string[] = [];
  layout.columns.forEach((column, index) => {
    if (wanted && !wanted.has(column.name.toLowerCase())) return;
    positions.push(index);
    types.push(column.type);
    definitions.push(`${quoteIdentifier(column.name)} ${SQLITE_TYPE[column.type]}`);
  });
  if (definitions.length === 0) definitions.push(`"__row" INTEGER`);
  return { positions, types, definitions };
}
