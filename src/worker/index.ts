import { createApp } from "./http/app";
import { runMaintenance } from "./maintenance/scheduled";
import { withStorageRetries } from "./storage/busy-retry";
import { WEBHOOK_QUEUE_NAME, type WebhookMessage } from "./webhooks/completion";
import { consumeWebhooks } from "./webhooks/delivery";

export { QueryState } from "./query/query-state";
export { UserQueries } from "./query/user-queries";

const app = createApp();

/**
 * The API Worker: HTTP, the maintenance cron, and the delivery of completion
 * webhooks (I/O only, kept out of the engine, where a running statement would
 * hold up its timeouts). Queries run in the engine Worker (src/worker/engine.ts).
 */
export default {
  fetch: (request, env, ctx) => app.fetch(request, withStorageRetries(env), ctx),
  scheduled: (_controller, env, ctx) => ctx.waitUntil(runMaintenance(withStorageRetries(env))),
  queue: (batch, env) => {
    if (batch.queue === WEBHOOK_QUEUE_NAME) return consumeWebhooks(batch, withStorageRetries(env));
    throw new Error(`the API Worker does not consume the queue ${batch.queue}`);
  },
} satisfies ExportedHandler<Env, WebhookMessage>;
