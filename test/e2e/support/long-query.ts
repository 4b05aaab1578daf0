/**
 * Counts to a billion, a row every million: it runs until it is cancelled
 * (or fails at its time limit), so it can never end by itself before a test
 * cancels it. No data item: the count alone keeps the engine busy.
 */
export const COUNTING_SQL =
  "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000) SELECT i FROM n WHERE i % 1000000 = 0";

/** Reads a query's status until `done` says so (at most about a minute); returns the last one read. */
export async function statusUntil<S extends { Status: string }>(
  read: () => Promise<S>,
  done: (status: S) => boolean,
): Promise<S> {
  let status = await read();
  for (let i = 0; i < 300 && !done(status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    status = await read();
  }
  return status;
}
