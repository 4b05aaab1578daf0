import type { QueryLimits } from "../config";

/** A failure of storage, not of the query: the run may be retried. */
export class TransientError extends Error {
  override name = "TransientError";
}

/**
 * Work past the quick lane's share: the query is moved to the long lane
 * (queues.ts) and run there from the start, so a long query never holds up
 * the short ones queued behind it.
 */
export class LongWork extends Error {
  override name = "LongWork";
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

/**
 * How every end for the time limit begins: the run's own stop, the watchdog's
 * (its worker died or hung), and the refusal of a query estimated to run past
 * it. An end reaches its owner's share (UserQueries) only as its message, so
 * these openings are the one place that says which ends start a cool-down.
 */
export const OVERRUN_OPENINGS = {
  ran: "Failed: the query ran longer than the time limit",
  watchdog: "Failed: the query did not finish within the time limit",
  estimated: "Failed: the query would run",
} as const;

/** Whether a failed query's message says it ran, or would have run, past the time limit. */
export function overranTimeLimit(message: string): boolean {
  return Object.values(OVERRUN_OPENINGS).some((opening) => message.startsWith(opening));
}

/** The messages of the limits both engines enforce, each naming its setting. */
export const limitStops = {
  time: (limits: Pick<QueryLimits, "timeLimitMs">, during = "") =>
    new Stop(`${OVERRUN_OPENINGS.ran} of ${limits.timeLimitMs / 1000} s (QUERY_TIME_LIMIT_SECONDS)${during}.`),
  /** The watchdog's: the query was still running well past its time limit. */
  watchdog: () => new Stop(`${OVERRUN_OPENINGS.watchdog} (the worker running it stopped or exceeded its CPU limit).`),
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
