/** The queues the engine Worker consumes (wrangler.engine.toml), by name: each one's handler is picked by it. */
export const QUEUES = {
  queries: "dqs-queries",
  queriesDead: "dqs-queries-dlq",
  builds: "dqs-builds",
  buildsDead: "dqs-builds-dlq",
} as const;

/** The dead-letter queues: messages that failed every retry, to be failed (queries) or dropped (builds). */
export const DEAD_LETTER_QUEUES: ReadonlySet<string> = new Set([QUEUES.queriesDead, QUEUES.buildsDead]);
