import { api, ok, type QueryStatus } from "./api";

export const FINISHED = new Set<QueryStatus["Status"]>(["succeeded", "failed", "cancelled"]);

/**
 * How long the submit waits for a quick query to end (Prefer: wait): one
 * round trip for most. The service answers within about a second more, and
 * the page shows Cancel meanwhile; a longer query is then followed by polling.
 */
const SUBMIT_WAIT_SECONDS = 1;

/** POST /query with Prefer: wait and an Idempotency-Key (a retried submit never runs twice); the QueryId. */
export async function submitQueryId(sql: string, parameters: QueryStatus["Parameters"] = null): Promise<string> {
  const submitted = await ok(
    api.POST("/query", {
      body: parameters === null ? { Sql: sql } : { Sql: sql, Parameters: parameters },
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

/**
 * The query that gives `sql`'s whole result sorted by one of its columns (by
 * position: names may repeat), NULLs last as the grid puts them. The text goes
 * inside a subquery on lines of its own, so a closing line comment stays closed.
 */
export function sortedSql(sql: string, sort: { column: number; descending: boolean }): string {
  const text = sql.replace(/[\s;]+$/, "");
  return `SELECT * FROM (\n${text}\n) ORDER BY ${sort.column + 1} ${sort.descending ? "DESC" : "ASC"} NULLS LAST`;
}

export async function cancelQuery(queryId: string): Promise<void> {
  await ok(api.POST("/query/{QueryId}/cancel", { params: { path: { QueryId: queryId } } }));
}
