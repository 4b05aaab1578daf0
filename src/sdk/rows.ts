import Papa from "papaparse";
import type { DataSchema } from "./types";

/** A value of a result row: typed by the result schema; an empty field is null (the result CSV writes NULL so). */
export type Value = string | number | bigint | boolean | null;

/** A result row, by column name (a repeated name gets `_2`, `_3`, as uploads do). */
export type Row = Record<string, Value>;

/** A result column: its name and the DataType the engine reported. */
export interface ResultColumn {
  name: string;
  type: string;
}

/** The columns a DataSchema's TableDefinition lists. */
export function columnsOf(schema: DataSchema): ResultColumn[] {
  return (schema.TableDefinition?.Columns ?? []).map((column) => ({
    name: column.Name,
    type: column.DataType.DataType.toUpperCase(),
  }));
}

/**
 * Parses a result CSV (header row, `\n` line ends, RFC 4180 quoting) into
 * rows, converting each field by its column's type. Only the line end after
 * the last row is dropped: an empty line is a row whose one field is NULL.
 */
export function parseResultCsv(text: string, columns: ResultColumn[]): { names: string[]; rows: Row[] } {
  const parsed = Papa.parse<string[]>(text, { header: false, skipEmptyLines: false });
  const lines = parsed.data;
  if (text.endsWith("\n") && lines.length > 0 && lines[lines.length - 1]!.length === 1 && lines.at(-1)![0] === "")
    lines.pop();
  const [header = [], ...records] = lines;
  const names = uniqueNames(header);
  const types = names.map((_, i) => columns[i]?.type ?? "STRING");
  const rows = records.map((fields) => {
    const row: Row = {};
    names.forEach((name, i) => {
      row[name] = convert(fields[i] ?? "", types[i]!);
    });
    return row;
  });
  return { names, rows };
}

function uniqueNames(header: string[]): string[] {
  const seen = new Map<string, number>();
  return header.map((name) => {
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    return count === 1 ? name : `${name}_${count}`;
  });
}

/** One CSV field as its column's type. INTEGER beyond 2^53 stays exact as a bigint. */
export function convert(field: string, type: string): Value {
  if (field === "") return null;
  switch (type) {
    case "INTEGER": {
      if (!/^-?\d+$/.test(field)) return field;
      const n = Number(field);
      return Number.isSafeInteger(n) ? n : BigInt(field);
    }
    case "DOUBLE": {
      const n = Number(field);
      return Number.isNaN(n) && field !== "NaN" ? field : n;
    }
    case "BOOLEAN": {
      const lower = field.toLowerCase();
      if (lower === "true" || lower === "1") return true;
      if (lower === "false" || lower === "0") return false;
      return field;
    }
    default:
      return field;
  }
}
