import type { WorkMessage } from "../../src/worker/query/consumer";
import api from "../../src/worker/index";
import engine from "../../src/worker/engine";
import { WEBHOOK_QUEUE_NAME, type WebhookMessage } from "../../src/worker/webhooks/completion";

export { QueryState, UserQueries } from "../../src/worker/index";
export { TableStore } from "../../src/worker/store";

// One Worker for the tests: the API's fetch, cron and webhook deliveries with the engine's queue consumers, as
// `npm run dev` runs the two side by side (the queues' consumer settings are given in vitest.config.ts).
export default {
  ...api,
  queue: (batch, env) =>
    batch.queue === WEBHOOK_QUEUE_NAME
      ? api.queue(batch as MessageBatch<WebhookMessage>, env)
      : engine.queue(batch as MessageBatch<WorkMessage>, env),
} satisfies ExportedHandler<Env, WorkMessage | WebhookMessage>;
