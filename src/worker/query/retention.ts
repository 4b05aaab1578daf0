import { settings } from "../config";
import { resultKeys } from "../storage/keys";
import { isoSeconds, nowSeconds } from "../util/time";
import { deleteQuery, dueResults, recordResultDeleted, resultStillHeld, rowsWithoutEnd } from "./history";
import { queryStub } from "./queries";

const BATCH = 200;

/**
 * Deletes query results whose retention is over, as the queries' rows say
 * (`expires_at`). Rows older than the retention time that do not have
 * their query's end first ask its Durable Object, which writes the end into
 * the row (one whose write failed, or recorded before rows kept ends); a
 * row whose object never had the query (a submit that failed part way) is
 * deleted. A result object that queries share (reuse.ts) is deleted with
 * the last of them: the others only say theirs is gone.
 */
export async function purgeExpiredResults(env: Env): Promise<number> {
  const now = nowSeconds();
  const cutoff = isoSeconds(now - settings(env).query.resultRetentionSeconds);
  for (const queryId of await rowsWithoutEnd(env.DB, cutoff, BATCH)) {
    if (!(await queryStub(env, queryId).get())) await deleteQuery(env.DB, queryId);
  }
  let purged = 0;
  for (const { queryId, resultKey } of await dueResults(env.DB, isoSeconds(now), BATCH)) {
    // The CSV, its row index and every format made from it, once no query in its retention holds them.
    if (!(await resultStillHeld(env.DB, resultKey, isoSeconds(now)))) await env.BUCKET.delete(resultKeys(resultKey));
    await recordResultDeleted(env.DB, queryId, isoSeconds(now));
    purged++;
  }
  return purged;
}
