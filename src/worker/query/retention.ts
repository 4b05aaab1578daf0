import { settings } from "../config";
import { isoSeconds, nowSeconds } from "../util/time";
import { FINISHED } from "./query-record";
import { queryStub } from "./queries";

const BATCH = 200;

/**
 * Deletes query results whose retention is over. Candidates come from D1
 * (queries older than the retention time, not yet purged); the query's
 * Durable Object says whether its result has really expired.
 */
export async function purgeExpiredResults(env: Env): Promise<number> {
  const now = nowSeconds();
  const cutoff = isoSeconds(now - settings(env).query.resultRetentionSeconds);
  const { results } = await env.DB.prepare(
    "SELECT id FROM queries WHERE result_purged_at IS NULL AND created_at <= ? ORDER BY created_at LIMIT ?",
  )
    .bind(cutoff, BATCH)
    .all<{ id: string }>();
  let purged = 0;
  for (const { id } of results) {
    const stub = queryStub(env, id);
    const record = await stub.get();
    if (record && !FINISHED.has(record.status)) continue;
    if (record?.resultKey) {
      if (record.expiresAt && record.expiresAt > isoSeconds(now)) continue;
      await env.BUCKET.delete(record.resultKey);
      await stub.expireResult();
      purged++;
    }
    await env.DB.prepare("UPDATE queries SET result_purged_at = ? WHERE id = ?").bind(isoSeconds(now), id).run();
  }
  return purged;
}
