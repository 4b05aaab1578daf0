import { createApp } from "./http/app";
import { runMaintenance } from "./maintenance/scheduled";
import { consumeDeadQueries, consumeQueries, type WorkMessage } from "./query/consumer";

export { QueryState } from "./query/query-state";

const app = createApp();
const DEAD_LETTER_QUEUE = /-dlq$/;

export default {
  fetch: app.fetch,
  queue: (batch, env) =>
    DEAD_LETTER_QUEUE.test(batch.queue) ? consumeDeadQueries(batch, env) : consumeQueries(batch, env),
  scheduled: (_controller, env, ctx) => ctx.waitUntil(runMaintenance(env)),
} satisfies ExportedHandler<Env, WorkMessage>;
