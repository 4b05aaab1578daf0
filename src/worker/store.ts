export { TableStore } from "./query/store/table-store";

/**
 * The table store Worker: it hosts the TableStore objects and answers a
 * liveness check, which `npm run dev` uses to see a store process held by
 * a statement past the time limit.
 */
export default {
  fetch: () => new Response("ok", { headers: { "content-type": "text/plain" } }),
} satisfies ExportedHandler<Env>;
