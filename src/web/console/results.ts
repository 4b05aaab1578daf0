import Papa from "papaparse";
import { columnsOf, parseResultCsv, type Value } from "../../sdk/rows";
import type { DataSchema } from "../../sdk/types";
import { api, apiCapabilities, ApiError, ok, type QueryStatus } from "./api";

export type { Value };

export interface ResultColumn {
  name: string;
  type: string;
}

/** The rows of a result the console holds: at most MAX_ROWS of them; `total` is the whole result's count. */
export interface ResultData {
  columns: ResultColumn[];
  rows: Value[][];
  total: number;
  /** The column the service sorted the whole result by (its rows come in that order), if it did. */
  sortedBy?: { column: number; descending: boolean };
}

/** The grid holds this many rows at most; beyond, the person downloads the result. */
export const MAX_ROWS = 100_000;
/** A result CSV larger than this is not read into the page (the rows endpoint pages instead). */
const MAX_CSV_BYTES = 64 * 1024 * 1024;
const PAGE_ROWS = 10_000;

/** A succeeded query's rows: from the JSON rows endpoint where the API has it, else from the result CSV. */
export async function loadResult(status: QueryStatus, signal: AbortSignal): Promise<ResultData> {
  const capabilities = await apiCapabilities();
  return capabilities.rows ? loadPages(status.QueryId, signal) : loadCsv(status, signal);
}

interface RowsPage {
  Columns: { Name: string; DataType: string }[];
  Rows: Value[][];
  RowCount: number;
  NextCursor: string | null;
}

/** GET /query/{QueryId}/results/rows, page after page, until MAX_ROWS or the last page. */
async function loadPages(queryId: string, signal: AbortSignal): Promise<ResultData> {
  const rows: Value[][] = [];
  let cursor: string | null = null;
  let page: RowsPage;
  do {
    const url = new URL(`/v1/query/${encodeURIComponent(queryId)}/results/rows`, location.origin);
    url.searchParams.set("limit", String(Math.min(PAGE_ROWS, MAX_ROWS - rows.length)));
    if (cursor) url.searchParams.set("cursor", cursor);
    const response = await fetch(url, { signal, credentials: "same-origin" });
    const body = (await response.json()) as { Data?: RowsPage; Status: { Message: string } };
    if (!response.ok || !body.Data) throw new ApiError(response.status, body.Status.Message);
    page = body.Data;
    rows.push(...page.Rows);
    cursor = page.NextCursor;
  } while (cursor && rows.length < MAX_ROWS);
  return {
    columns: page.Columns.map((column) => ({ name: column.Name, type: column.DataType })),
    rows,
    total: page.RowCount,
  };
}

/** The result schema for the types, then the result CSV (through its download redirect), typed by the SDK's parser. */
async function loadCsv(status: QueryStatus, signal: AbortSignal): Promise<ResultData> {
  const path = { params: { path: { QueryId: status.QueryId } } };
  const schema = await ok(api.GET("/query/{QueryId}/results/metadata/schema", { ...path, signal }));
  const columns = columnsOf(JSON.parse(schema.Data.Schema) as DataSchema);
  if (status.Size > MAX_CSV_BYTES)
    throw new ApiError(413, "This result is too large to show here; download it instead.");
  const response = await fetch(`/v1/query/${encodeURIComponent(status.QueryId)}/results/rawdata`, {
    signal,
    credentials: "same-origin",
  });
  if (!response.ok) {
    const body = (await response.json().catch(() => null)) as { Status?: { Message: string } } | null;
    throw new ApiError(response.status, body?.Status?.Message ?? `The result answered ${response.status}.`);
  }
  const { names, rows } = parseResultCsv(await response.text(), columns);
  return {
    columns: names.map((name, i) => ({ name, type: columns[i]?.type ?? "STRING" })),
    rows: rows.slice(0, MAX_ROWS).map((row) => names.map((name) => row[name] ?? null)),
    total: rows.length,
  };
}

/** A value as text; a whole DOUBLE keeps its ".0", as the result CSV writes it, so it never reads as an INTEGER. */
export function valueText(value: Value, type: string): string {
  if (value === null) return "NULL";
  if (type === "DOUBLE" && typeof value === "number" && Number.isInteger(value)) return value.toFixed(1);
  return typeof value === "bigint" ? value.toString() : String(value);
}

/** The rows in the given order as CSV, written as the service writes a result (NULL as an empty field, the empty string `""`, `\n` ends). */
export function toCsv(result: ResultData, order: number[]): string {
  const types = result.columns.map((column) => column.type);
  const rows = order.map((i) =>
    result.rows[i]!.map((value, c) => (value === null ? null : valueText(value, types[c]!))),
  );
  // papaparse writes null as an empty field; only the empty string needs quotes to stay one.
  const quotes = (value: unknown) => value === "";
  return `${Papa.unparse({ fields: result.columns.map((column) => column.name), data: rows }, { newline: "\n", quotes })}\n`;
}
