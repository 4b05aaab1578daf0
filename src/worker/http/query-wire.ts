import type { QueryRecord } from "../query/query-record";

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
  };
}
