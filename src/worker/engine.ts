import { consumeDeadQueries, consumeQueries, type WorkMessage } from "./query/consumer";
import { DEAD_LETTER_QUEUES, QUEUES } from "./query/queues";
import { withStorageRetries } from "./storage/busy-retry";

const LIVE_QUEUES: ReadonlySet<string> = new Set([QUEUES.queries, QUEUES.queriesLong, QUEUES.builds]);

/**
 * The engine Worker: consumes the query queues (the quick lane and the long
 * lane) and the build queue (column images and table stores) in isolates of
 * its own, and their dead-letter queues; each consumer takes either kind of
 * message. A queue it does not know fails the batch, so a misnamed binding
 * shows at once.
 */
export default {
  // No HTTP interface; an answer (rather than workerd's error for a missing handler) keeps probes quiet.
  fetch: () => new Response("The dqs engine has no HTTP interface; the API is the dqs Worker.", { status: 404 }),
  queue: (batch, env) => {
    const retrying = withStorageRetries(env);
    if (DEAD_LETTER_QUEUES.has(batch.queue)) return consumeDeadQueries(batch, retrying);
    if (LIVE_QUEUES.has(batch.queue)) return consumeQueries(batch, retrying, batch.queue === QUEUES.queries);
    throw new Error(`the engine does not consume the queue ${batch.queue}`);
  },
} satisfies ExportedHandler<Env, WorkMessage>;
