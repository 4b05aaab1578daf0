import Papa from "papaparse";
import type { DataSchema, ResultRowsPage } from "./types";

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

/**
 * The header and the first `limit` records of a result CSV stream, as text;
 * reading stops there, so the rest is never downloaded. A record ends at a
 * line end outside quotes: quotes inside a quoted field come doubled, so
 * their count alone tells whether a line end is inside one.
 */
export async function readCsvHead(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ text: string; more: boolean }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  let ends = 0;
  let quoted = false;
  try {
    for (;;) {
      const { done, value: bytes } = await reader.read();
      if (done) return { text: chunks.join("") + decoder.decode(), more: false };
      const value = decoder.decode(bytes, { stream: true });
      for (let i = 0; i < value.length; i++) {
        const code = value.charCodeAt(i);
        if (code === 0x22) quoted = !quoted;
        // The header's line end, then one per record.
        else if (code === 0x0a && !quoted && ++ends > limit) {
          chunks.push(value.slice(0, i + 1));
          return { text: chunks.join(""), more: i + 1 < value.length || (await hasMore(reader)) };
        }
      }
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

async function hasMore(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<boolean> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return false;
    if (value.byteLength > 0) return true;
  }
}

/**
 * The rows of a page of the rows endpoint, keyed and typed as parseResultCsv
 * does: the service sends an INTEGER beyond 2^53 as a string, here a bigint.
 */
export function rowsOfPage(page: ResultRowsPage): { columns: ResultColumn[]; names: string[]; rows: Row[] } {
  const columns = page.Columns.map((column) => ({ name: column.Name, type: column.DataType }));
  const names = uniqueNames(columns.map((column) => column.name));
  const rows = page.Rows.map((values) => {
    const row: Row = {};
    names.forEach((name, i) => {
      const value = values[i] ?? null;
      row[name] = typeof value === "string" ? convert(value, columns[i]!.type) : value;
    });
    return row;
  });
  return { columns, names, rows };
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
