// R2 key layout (see migrations/README.md):
//   data/<dataset id>/<version>   raw bytes of one uploaded version of a data item
//   results/<query id>.csv        a query's result

/** Where one uploaded version of a data item is stored. */
export function dataObjectKey(datasetId: string, version: string): string {
  return `data/${datasetId}/${version}`;
}

/** Where a query's result is stored. */
export function resultObjectKey(queryId: string): string {
  return `results/${queryId}.csv`;
}
