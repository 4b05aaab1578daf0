import { resultIndexKey } from "../../storage/keys";
import { R2StreamWriter } from "../../storage/r2-writer";
import type { ResultTarget } from "./writer";

/**
 * A query's result as both engines store it: the CSV streamed to R2 as it is
 * produced, and its row index put beside it when it completes. Nothing is
 * read before the query is recorded as succeeded, which is after both.
 */
export function storedResultTarget(bucket: R2Bucket, csvKey: string): ResultTarget {
  const indexKey = resultIndexKey(csvKey);
  const writer = new R2StreamWriter(bucket, csvKey, () => ({
    httpMetadata: { contentType: "text/csv; charset=utf-8" },
  }));
  return {
    write: (bytes) => writer.write(bytes),
    async finish(rowIndex) {
      await writer.finish();
      await bucket.put(indexKey, rowIndex, { httpMetadata: { contentType: "application/octet-stream" } });
    },
    async abort() {
      await writer.abort();
      // A completion that failed halfway may have left either object; no query points to them.
      await bucket.delete([csvKey, indexKey]).catch(() => undefined);
    },
  };
}
