import { createApp } from "./http/app";
import { runMaintenance } from "./maintenance/scheduled";

export { QueryState } from "./query/query-state";
export { TableStore } from "./query/store/table-store";
export { UserQueries } from "./query/user-queries";

const app = createApp();

/** The API Worker: HTTP and the maintenance cron. Queries run in the engine Worker (src/worker/engine.ts). */
export default {
  fetch: app.fetch,
  scheduled: (_controller, env, ctx) => ctx.waitUntil(runMaintenance(env)),
} satisfies ExportedHandler<Env>;
