import { TABLE_STORE_KEY_PREFIX } from "./keys";

/** Lists an object as not (or not yet) belonging to anything, to be deleted after `deleteAfter`. */
export async function markOrphan(db: D1Database, key: string, reason: string, deleteAfter: string): Promise<void> {
  await db
    .prepare(
      `INSERT INTO orphan_objects (object_key, reason, delete_after) VALUES (?, ?, ?)
       ON CONFLICT (object_key) DO UPDATE SET reason = excluded.reason, delete_after = excluded.delete_after`,
    )
    .bind(key, reason, deleteAfter)
    .run();
}

/** Deletes an orphan object now and forgets it; if R2 fails, the sweep retries later. */
export async function deleteOrphanNow(db: D1Database, bucket: R2Bucket, key: string): Promise<void> {
  await bucket.delete(key);
  await db.prepare("DELETE FROM orphan_objects WHERE object_key = ?").bind(key).run();
}

/**
 * As deleteOrphanNow, only while the object is still listed for `reason`:
 * after a write whose outcome is unknown (a D1 error), an object the write
 * did take off the list (or listed anew, for another reason) stays.
 */
export async function deleteOrphanNowIfStill(db: D1Database, bucket: R2Bucket, key: string, reason: string) {
  const listed = await db
    .prepare("SELECT 1 AS listed FROM orphan_objects WHERE object_key = ? AND reason = ?")
    .bind(key, reason)
    .first<{ listed: number }>();
  if (listed) await deleteOrphanNow(db, bucket, key);
}

/** Empties the table store behind an orphan key `table-store/<object key>`. */
export type StoreEmptier = (key: string) => Promise<void>;

/** Deletes orphan objects (and empties orphan table stores) whose time has come, oldest first; returns how many went. */
export async function sweepOrphans(
  db: D1Database,
  bucket: R2Bucket,
  emptyStore: StoreEmptier,
  now: string,
  limit = 500,
): Promise<number> {
  const { results } = await db
    .prepare("SELECT object_key AS key FROM orphan_objects WHERE delete_after <= ? ORDER BY delete_after LIMIT ?")
    .bind(now, limit)
    .all<{ key: string }>();
  if (results.length === 0) return 0;
  const keys = results.map((row) => row.key);
  const stores = keys.filter((key) => key.startsWith(TABLE_STORE_KEY_PREFIX));
  const objects = keys.filter((key) => !key.startsWith(TABLE_STORE_KEY_PREFIX));
  for (const key of stores) await emptyStore(key);
  if (objects.length > 0) await bucket.delete(objects);
  await db.batch(keys.map((key) => db.prepare("DELETE FROM orphan_objects WHERE object_key = ?").bind(key)));
  return keys.length;
}
