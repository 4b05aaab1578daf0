import { consumeDeadQueries, consumeQueries, type WorkMessage } from "./query/consumer";

const DEAD_LETTER_QUEUE = /-dlq$/;

/** The engine Worker: consumes the query queue (queries and column-image builds) in isolates of its own. */
export default {
  queue: (batch, env) =>
    DEAD_LETTER_QUEUE.test(batch.queue) ? consumeDeadQueries(batch, env) : consumeQueries(batch, env),
} satisfies ExportedHandler<Env, WorkMessage>;
