/**
 * The queues the engine Worker consumes (wrangler.engine.toml), by name: each one's handler is picked by it.
 * Queries come to the quick lane; one that needs more than its share there moves to the long lane, which the
 * engine's other deployment consumes (with the builds), so short queries never wait behind long ones.
 */
export const QUEUES = {
  queries: "dqs-queries",
  queriesLong: "dqs-queries-long",
  queriesDead: "dqs-queries-dlq",
  builds: "dqs-builds",
  buildsDead: "dqs-builds-dlq",
} as const;

/** The dead-letter queues: messages that failed every retry, to be failed (queries) or dropped (builds). */
export const DEAD_LETTER_QUEUES: ReadonlySet<string> = new Set([QUEUES.queriesDead, QUEUES.buildsDead]);

/** The quick lane's share of a query's work: past it, the query is run again from the start in the long lane. */
export const QUICK_LANE_MS = 500;
