import type { WorkMessage } from "../../src/worker/query/consumer";
import api from "../../src/worker/index";
import engine from "../../src/worker/engine";

export { QueryState, TableStore, UserQueries } from "../../src/worker/index";

// One Worker for the tests: the API's fetch and cron with the engine's queue consumers, as `npm run dev` runs
// the two side by side (the queue's consumer settings are the engine's, given in vitest.config.ts).
export default { ...api, queue: engine.queue } satisfies ExportedHandler<Env, WorkMessage>;
