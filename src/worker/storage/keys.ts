// R2 key layout (see migrations/README.md):
//   data/<dataset id>/<version>   raw bytes of one uploaded version of a data item
//   data/<dataset id>/<version>.columns/<i>   query-ready SQLite image of column i of that version
//   results/<query id>.csv        a query's result
//   results/<query id>.rows       its row index (the byte offset of every 1,000th row)
//   results/<query id>.<format>   the result as NDJSON, Parquet or Arrow, made when first asked for
// Orphan keys that are not R2 objects:
//   table-store/<object key>      the table store (Durable Object) of that version

/** Where one uploaded version of a data item is stored. */
export function dataObjectKey(datasetId: string, version: string): string {
  return `data/${datasetId}/${version}`;
}

/** The representations of a query's result: the CSV the engine writes, and those made from it on request. */
export const RESULT_FORMATS = ["csv", "ndjson", "parquet", "arrow"] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

/** Where a query's result is stored, as CSV or (made from the CSV) in another format. */
export function resultObjectKey(queryId: string, format: ResultFormat = "csv"): string {
  return `results/${queryId}.${format}`;
}

/** Where the row index (result/row-index.ts) of the result CSV stored under `csvKey` is stored: beside it. */
export function resultIndexKey(csvKey: string): string {
  return `${csvKey.replace(/\.csv$/, "")}.rows`;
}

/** Every object a query's result may have: they expire together. */
export function resultKeys(queryId: string): string[] {
  return [
    ...RESULT_FORMATS.map((format) => resultObjectKey(queryId, format)),
    resultIndexKey(resultObjectKey(queryId)),
  ];
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
