import type { DataTypeName } from "../../ingest/value-types";
import { resultIndexKey } from "../../storage/keys";
import { openObjectStream } from "../../storage/object-stream";
import type { ResultColumn } from "../query-record";
import { readStoredCsv } from "../stored-csv";
import { rowSpan } from "./row-index";
import { jsonValue, type JsonValue } from "./values";

export const PAGE_DEFAULT_ROWS = 1000;
export const PAGE_MAX_ROWS = 10_000;
/**
 * A page ends early (after at least one row) once its own rows span this much CSV, so wide rows still make a
 * modest answer; the rows skipped to reach its first row do not count, or every later page would hold one row.
 */
const PAGE_MAX_BYTES = 8 * 1024 * 1024;

/** A succeeded query's result, as its record describes it. */
export interface StoredResult {
  queryId: string;
  resultKey: string;
  rowCount: number;
  size: number;
  columns: ResultColumn[];
}

export type PageRead =
  | { ok: true; rows: JsonValue[][]; next: number | null }
  | { ok: false; reason: "gone" }
  | { ok: false; reason: "unreadable"; message: string }
  | { ok: false; reason: "row too long" };

/**
 * Rows [first, first + limit) of a result, typed by its columns. Only the
 * bytes around them are read: two index entries, then that span of the CSV
 * (range requests). A result stored before row indexes existed is read
 * from its start.
 */
export async function readPage(
  bucket: R2Bucket,
  result: StoredResult,
  first: number,
  limit: number,
): Promise<PageRead> {
  if (first >= result.rowCount) return { ok: true, rows: [], next: null };
  const indexKey = resultIndexKey(result.resultKey);
  const indexed = await rowSpan(first, Math.min(first + limit, result.rowCount), result, async (offset, length) => {
    const entries = await bucket.get(indexKey, { range: { offset, length } });
    return entries ? new Uint8Array(await entries.arrayBuffer()) : null;
  });
  const span = indexed ? { ...indexed, header: false } : { offset: 0, end: result.size, skip: first, header: true };
  const stream = await openObjectStream(bucket, result.resultKey, undefined, span);
  if (!stream) return { ok: false, reason: "gone" };
  const types: DataTypeName[] = result.columns.map((column) => column.type);
  const rows: JsonValue[][] = [];
  let skip = span.skip;
  let readBytes = 0;
  let firstRowBytes = 0;
  const read = await readStoredCsv(
    stream,
    { name: `the result of query ${result.queryId}`, layout: { delimiter: ",", header: span.header } },
    (bytes) => {
      readBytes = bytes;
      return null;
    },
    (fields) => {
      if (skip > 0) {
        skip--;
        return true;
      }
      if (rows.length === 0) firstRowBytes = readBytes;
      rows.push(fields.map((text, i) => jsonValue(text, types[i] ?? "STRING")));
      return rows.length < limit && readBytes - firstRowBytes < PAGE_MAX_BYTES;
    },
  );
  if (!read.ok)
    return read.rowTooLong
      ? { ok: false, reason: "row too long" }
      : { ok: false, reason: "unreadable", message: read.message };
  const after = first + rows.length;
  return { ok: true, rows, next: after < result.rowCount ? after : null };
}
