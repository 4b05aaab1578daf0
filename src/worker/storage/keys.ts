import { sha256 } from "../util/crypto";

// R2 key layout (see migrations/README.md):
//   data/<dataset id>/<version>   raw bytes of one uploaded version of a data item
//   data/<dataset id>/<version>.columns/<i>   query-ready SQLite image of column i of that version
//   results/<hash>.csv            a query's result (hash: SHA-256 of its query id, base64url)
//   results/<hash>.rows           its row index (the byte offset of every 1,000th row)
//   results/<hash>.<format>       the result as NDJSON, Parquet or Arrow, made when first asked for
// Orphan keys that are not R2 objects:
//   table-store/<object key>      the table store (Durable Object) of that version

/** Where one uploaded version of a data item is stored. */
export function dataObjectKey(datasetId: string, version: string): string {
  return `data/${datasetId}/${version}`;
}

/** The representations of a query's result: the CSV the engine writes, and those made from it on request. */
export const RESULT_FORMATS = ["csv", "ndjson", "parquet", "arrow"] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

/**
 * Where a query's result CSV is stored: named by a hash of its query id, so
 * the download URL of a query that reuses it (query/reuse.ts), which shows
 * the key, never shows the id of the query it came from.
 */
export async function resultObjectKey(queryId: string): Promise<string> {
  return `results/${await sha256(`result:${queryId}`)}.csv`;
}

/**
 * Where the result stored as CSV under `csvKey` is kept in `format`: beside
 * it, so the queries that share a result (reuse) share its formats too.
 */
export function resultFormatKey(csvKey: string, format: ResultFormat): string {
  return format === "csv" ? csvKey : `${csvKey.replace(/\.csv$/, "")}.${format}`;
}

/** Where the row index (result/row-index.ts) of the result CSV stored under `csvKey` is stored: beside it. */
export function resultIndexKey(csvKey: string): string {
  return `${csvKey.replace(/\.csv$/, "")}.rows`;
}

/** Every object of the result stored as CSV under `csvKey`: they expire together. */
export function resultKeys(csvKey: string): string[] {
  return [...RESULT_FORMATS.map((format) => resultFormatKey(csvKey, format)), resultIndexKey(csvKey)];
}

/** Where the query-ready image of column `index` of one uploaded version is stored. */
export function columnImageKey(objectKey: string, index: number): string {
  return `${objectKey}.columns/${index}`;
}

/** Orphan keys of this prefix name a version's table store, not an R2 object. */
export const TABLE_STORE_KEY_PREFIX = "table-store/";

/** The orphan key of a version's table store; also the name its Durable Object is found by. */
export function tableStoreKey(objectKey: string): string {
  return `${TABLE_STORE_KEY_PREFIX}${objectKey}`;
}
