// R2 key layout (see migrations/README.md):
//   data/<dataset id>/<version>   raw bytes of one uploaded version of a data item
//   data/<dataset id>/<version>.columns/<i>   query-ready SQLite image of column i of that version
//   results/<query id>.csv        a query's result
// Orphan keys that are not R2 objects:
//   table-store/<object key>      the table store (Durable Object) of that version

/** Where one uploaded version of a data item is stored. */
export function dataObjectKey(datasetId: string, version: string): string {
  return `data/${datasetId}/${version}`;
}

/** Where a query's result is stored. */
export function resultObjectKey(queryId: string): string {
  return `results/${queryId}.csv`;
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
