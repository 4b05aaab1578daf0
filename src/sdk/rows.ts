import type { DataSchema, ResultRowsPage } from "./types";

/** A value of a result row: typed by the result schema; NULL is null, the empty string "". */
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
 * rows, converting each field by its column's type: an empty field is NULL,
 * `""` the empty string. Only the line end after the last row is dropped:
 * an empty line is a row whose one field is NULL.
 */
export function parseResultCsv(text: string, columns: ResultColumn[]): { names: string[]; rows: Row[] } {
  const [header = [], ...records] = csvRecords(text);
  const names = uniqueNames(header.map((name) => name ?? ""));
  const types = names.map((_, i) => columns[i]?.type ?? "STRING");
  const rows = records.map((fields) => {
    const row: Row = {};
    names.forEach((name, i) => {
      row[name] = convert(fields[i] ?? null, types[i]!);
    });
    return row;
  });
  return { names, rows };
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const LINE_FEED = 0x0a;

/**
 * The records of a CSV as the service writes results (`,`, `\n`, RFC 4180
 * quoting), each field its text, or null when it is empty and unquoted.
 * Read here rather than by papaparse, whose fields cannot tell `""` from an
 * empty field. A line end at the very end closes the last record.
 */
function csvRecords(text: string): (string | null)[][] {
  const records: (string | null)[][] = [];
  if (text === "") return records;
  let record: (string | null)[] = [];
  let at = 0;
  for (;;) {
    let value: string | null = null;
    if (text.charCodeAt(at) === QUOTE) {
      value = "";
      let from = at + 1;
      for (;;) {
        const close = text.indexOf('"', from);
        if (close < 0) {
          value += text.slice(from);
          at = text.length;
          break;
        }
        value += text.slice(from, close);
        at = close + 1;
        if (text.charCodeAt(at) !== QUOTE) break;
        value += '"';
        from = at + 1;
      }
    }
    // Unquoted text, or anything after a closing quote up to the field's end, is taken as written.
    let end = at;
    while (end < text.length && text.charCodeAt(end) !== COMMA && text.charCodeAt(end) !== LINE_FEED) end++;
    if (end > at) value = (value ?? "") + text.slice(at, end);
    record.push(value);
    at = end;
    if (at >= text.length) break;
    at++;
    if (text.charCodeAt(at - 1) === LINE_FEED) {
      records.push(record);
      record = [];
      if (at >= text.length) return records;
    }
  }
  records.push(record);
  return records;
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

/** One field as its column's type: null stays NULL, "" the empty string. INTEGER beyond 2^53 stays exact as a bigint. */
export function convert(field: string | null, type: string): Value {
  if (field === null || field === "") return field;
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
