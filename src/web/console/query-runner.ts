import { api, ok, type QueryStatus } from "./api";

export const FINISHED = new Set<QueryStatus["Status"]>(["succeeded", "failed", "cancelled"]);

/**
 * How long the submit waits for a quick query to end (Prefer: wait): one
 * round trip for most. The service answers within about a second more, and
 * the page shows Cancel meanwhile; a longer query is then followed by polling.
 */
const SUBMIT_WAIT_SECONDS = 1;

/** POST /query with Prefer: wait and an Idempotency-Key (a retried submit never runs twice); the QueryId. */
export async function submitQueryId(sql: string): Promise<string> {
  const submitted = await ok(
    api.POST("/query", {
      body: { Sql: sql },
      headers: { Prefer: `wait=${SUBMIT_WAIT_SECONDS}`, "Idempotency-Key": crypto.randomUUID() },
    }),
  );
  return submitted.Data.QueryId;
}

/** Submits SQL (as submitQueryId); the query's status. */
export async function submitQuery(sql: string): Promise<QueryStatus> {
  return queryStatus(await submitQueryId(sql));
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
