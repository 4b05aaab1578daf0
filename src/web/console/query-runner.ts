import { api, ok, type QueryStatus } from "./api";

export const FINISHED = new Set<QueryStatus["Status"]>(["succeeded", "failed", "cancelled"]);

/**
 * How long the submit waits for a quick query to end (Prefer: wait): one
 * round trip for most; a longer one shows its live status (and Cancel) soon.
 */
const SUBMIT_WAIT_SECONDS = 1;

/** POST /query with Prefer: wait and an Idempotency-Key (a retried submit never runs twice); the query's status. */
export async function submitQuery(sql: string): Promise<QueryStatus> {
  const submitted = await ok(
    api.POST("/query", {
      body: { Sql: sql },
      headers: { Prefer: `wait=${SUBMIT_WAIT_SECONDS}`, "Idempotency-Key": crypto.randomUUID() },
    }),
  );
  // Where the API answers with the status too (the "query API for programs" issue), no second call is needed.
  const inline = (submitted.Data as { Status?: unknown }).Status;
  if (inline && typeof inline === "object") return inline as QueryStatus;
  return queryStatus(submitted.Data.QueryId);
}

export async function queryStatus(queryId: string): Promise<QueryStatus> {
  return (await ok(api.GET("/query/{QueryId}/status", { params: { path: { QueryId: queryId } } }))).Data;
}

/** Follows a query until it ends, reporting each status; polls quickly at first, then every second. */
export async function followQuery(
  first: QueryStatus,
  onStatus: (status: QueryStatus) => void,
  signal: AbortSignal,
): Promise<QueryStatus> {
  let status = first;
  onStatus(status);
  for (let delay = 200; !FINISHED.has(status.Status); delay = Math.min(1000, delay * 1.5)) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    if (signal.aborted) return status;
    status = await queryStatus(status.QueryId);
    onStatus(status);
  }
  return status;
}

export async function cancelQuery(queryId: string): Promise<void> {
  await ok(api.POST("/query/{QueryId}/cancel", { params: { path: { QueryId: queryId } } }));
}
