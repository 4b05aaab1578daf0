import { consumeDeadQueries, consumeQueries, type WorkMessage } from "./query/consumer";

const DEAD_LETTER_QUEUE = /-dlq$/;

/**
 * The engine Worker: consumes the query queue and the build queue (column
 * images) in isolates of its own; each consumer takes either kind of message.
 */
export default {
  queue: (batch, env) =>
    DEAD_LETTER_QUEUE.test(batch.queue) ? consumeDeadQueries(batch, env) : consumeQueries(batch, env),
} satisfies ExportedHandler<Env, WorkMessage>;
