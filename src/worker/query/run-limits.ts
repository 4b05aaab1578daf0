import type { QueryLimits } from "../config";

/** A failure of storage, not of the query: the run may be retried. */
export class TransientError extends Error {
  override name = "TransientError";
}

/** Ends a query with a message for its owner (cancelled: by the owner). */
export class Stop extends Error {
  constructor(
    message: string,
    readonly cancelled = false,
  ) {
    super(message);
  }
}

/** Runs a storage call; its failure is transient (the consumer retries the query). */
export async function transient<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof TransientError) throw error;
    throw new TransientError(`${what} failed: ${String(error)}`);
  }
}

/** The messages of the limits both engines enforce, each naming its setting. */
export const limitStops = {
  time: (limits: Pick<QueryLimits, "timeLimitMs">, during = "") =>
    new Stop(
      `Failed: the query ran longer than the time limit of ${limits.timeLimitMs / 1000} s (QUERY_TIME_LIMIT_SECONDS)${during}.`,
    ),
  load: (limits: Pick<QueryLimits, "maxLoadBytes">) =>
    new Stop(
      `Failed: the query would load more than the limit of ${limits.maxLoadBytes} bytes (QUERY_MAX_LOAD_BYTES). Query fewer or smaller data items.`,
    ),
  resultRows: (limits: Pick<QueryLimits, "maxResultRows">) =>
    new Stop(
      `Failed: the result has more than the limit of ${limits.maxResultRows} rows (QUERY_MAX_RESULT_ROWS). Add a LIMIT or aggregate.`,
    ),
  resultBytes: (limits: Pick<QueryLimits, "maxResultBytes">) =>
    new Stop(
      `Failed: the result is larger than the limit of ${limits.maxResultBytes} bytes (QUERY_MAX_RESULT_BYTES). Add a LIMIT or aggregate.`,
    ),
  cancelled: () => new Stop("Cancelled by its owner.", true),
};
