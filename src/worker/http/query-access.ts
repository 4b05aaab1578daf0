import type { QueryRecord } from "../query/query-record";
import { findOwnQuery } from "../query/queries";
import type { StoredResult } from "../query/result/pages";
import type { AppContext } from "./context";
import { ApiError, badRequest, notFound } from "./errors";

export function queryNotFound(queryId: string) {
  return notFound(`Query ${queryId} not found, or it is not yours.`);
}

/** The caller's query; someone else's answers 404 exactly as a missing one. */
export async function ownQuery(c: AppContext, queryId: string): Promise<QueryRecord> {
  const record = await findOwnQuery(c.env, c.get("principal"), queryId);
  if (!record) throw queryNotFound(queryId);
  return record;
}

/** The 410 of a result that retention deleted. */
export function resultExpired(record: QueryRecord): ApiError {
  return new ApiError(
    410,
    `The result of query ${record.queryId} expired at ${record.expiresAt} and was deleted; run the query again.`,
  );
}

/**
 * A query's stored result, or the answer every result endpoint gives
 * instead (docs/api.md): 400 while it is queued or running, 400 with the
 * reason once it failed or was cancelled, 410 once its result expired.
 */
export function storedResult(record: QueryRecord): StoredResult {
  switch (record.status) {
    case "queued":
    case "running":
      throw badRequest(`Query ${record.queryId} is still running (${record.status}); try again when it has succeeded.`);
    case "failed":
    case "cancelled":
      throw badRequest(`Query ${record.queryId} has no result: it ${record.status}. ${record.message}`);
    case "succeeded":
      break;
  }
  if (!record.resultKey) throw resultExpired(record);
  return {
    queryId: record.queryId,
    resultKey: record.resultKey,
    rowCount: record.rowCount ?? 0,
    size: record.size,
    columns: record.resultColumns ?? [],
  };
}
