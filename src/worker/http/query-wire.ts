import type { QueryRecord } from "../query/query-record";
import type { QueryCallback } from "../webhooks/completion";

/** QueryStatusResponse Data from a query record. */
export function queryStatusData(record: QueryRecord) {
  return {
    QueryId: record.queryId,
    Status: record.status,
    Sql: record.sql,
    Parameters: record.parameters,
    CreatedAt: record.createdAt,
    UpdatedAt: record.updatedAt,
    Message: record.message,
    Size: record.size,
    RowCount: record.rowCount,
    BytesLoaded: record.bytesLoaded,
    PeakMemoryBytes: record.peakMemoryBytes,
    Timings: record.timings && {
      QueueWaitMs: record.timings.queueWaitMs,
      LoadMs: record.timings.loadMs,
      ExecuteMs: record.timings.executeMs,
      WriteMs: record.timings.writeMs,
    },
    ExpiresAt: record.expiresAt,
    Engine: record.engine ?? null,
    Reused: record.reused,
    Callback: record.callback ? callbackData(record.callback) : null,
  };
}

/** QueryStatus Callback: where the completion webhook goes and how its latest attempt went. */
function callbackData(callback: QueryCallback) {
  const last = callback.lastDelivery;
  return {
    Url: callback.url,
    LastDelivery: last && {
      Attempt: last.attempt,
      At: last.at,
      StatusCode: last.statusCode,
      Error: last.error,
      Delivered: last.delivered,
      NextAttemptAt: last.nextAttemptAt,
    },
  };
}
