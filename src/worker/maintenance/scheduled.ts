import { settings } from "../config";
import { requestMissingPreparation } from "../query/prepare-item";
import { purgeExpiredResults } from "../query/retention";
import { storeEmptier } from "../query/store/store-state";
import { sweepOrphans } from "../storage/orphans";
import { isoSeconds, nowSeconds } from "../util/time";

/** At most this many batches per run; what is left waits for the next run. */
const MAX_BATCHES = 20;
/** A version still without column images this long after its upload is asked for again (its message was lost, or it predates them). */
const IMAGES_OVERDUE_SECONDS = 600;

/**
 * The cron's work: delete R2 objects nothing points to any more, expired query
 * results, and D1 rows whose time is over; ask again for overdue column images.
 */
export async function runMaintenance(env: Env): Promise<void> {
  const now = isoSeconds(nowSeconds());
  let removed = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const batch = await sweepOrphans(env.DB, env.BUCKET, storeEmptier(env), now);
    removed += batch;
    if (batch === 0) break;
  }
  // A spent refresh token is kept until it would have expired, so its reuse is still recognised until then.
  const expired = await env.DB.batch([
    env.DB.prepare("DELETE FROM login_flows WHERE expires_at <= ?").bind(now),
    env.DB.prepare("DELETE FROM dev_idp_codes WHERE expires_at <= ?").bind(now),
    env.DB.prepare("DELETE FROM login_codes WHERE expires_at <= ?").bind(now),
    env.DB.prepare("DELETE FROM refresh_tokens WHERE expires_at <= ?").bind(now),
    // Attempts to deliver a completion webhook are kept as long as query results.
    env.DB.prepare("DELETE FROM webhook_deliveries WHERE at <= ?").bind(
      isoSeconds(nowSeconds() - settings(env).query.resultRetentionSeconds),
    ),
    env.DB.prepare("DELETE FROM console_sessions WHERE expires_at <= ?").bind(now),
  ]);
  const rows = expired.reduce((sum, result) => sum + result.meta.changes, 0);
  const results = await purgeExpiredResults(env);
  const imagesRequested = await requestMissingPreparation(env, isoSeconds(nowSeconds() - IMAGES_OVERDUE_SECONDS));
  console.log(
    JSON.stringify({
      maintenance: "sweep",
      objectsRemoved: removed,
      expiredRowsRemoved: rows,
      resultsPurged: results,
      imagesRequested,
    }),
  );
}
