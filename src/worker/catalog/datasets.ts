import { TABLE_STORE_KEY_PREFIX } from "../storage/keys";
import { randomToken } from "../util/crypto";
import type { DataItemRecord, DatasetRecord } from "./access";

/** A replaced or deleted object stays this long, so queries already reading it can finish. */
export const ORPHAN_GRACE_SECONDS = 3600;

export interface DatasetSettings {
  visibility?: "private" | "public";
  description?: string;
}

/** Creates a dataset under an account, or applies the settings to the existing one; says which happened. */
export async function putDataset(
  db: D1Database,
  accountId: string,
  name: string,
  settings: DatasetSettings,
  now: string,
): Promise<"created" | "updated"> {
  const inserted = await db
    .prepare(
      `INSERT OR IGNORE INTO datasets (id, account_id, name, visibility, description, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(randomToken(16), accountId, name, settings.visibility ?? "private", settings.description ?? "", now, now)
    .run();
  if (inserted.meta.changes === 1) return "created";
  if (settings.visibility !== undefined || settings.description !== undefined)
    await db
      .prepare(
        `UPDATE datasets SET visibility = coalesce(?, visibility), description = coalesce(?, description), updated_at = ?
         WHERE account_id = ? AND name = ?`,
      )
      .bind(settings.visibility ?? null, settings.description ?? null, now, accountId, name)
      .run();
  return "updated";
}

/**
 * Deletes a dataset with its grants and data items. The R2 objects are
 * listed as orphans in the same transaction, so none is forgotten; they are
 * removed once queries that may still read them have had time to finish.
 */
export async function deleteDataset(db: D1Database, dataset: DatasetRecord, deleteAfter: string): Promise<void> {
  await db.batch([
    db
      .prepare(
        `INSERT OR IGNORE INTO orphan_objects (object_key, reason, delete_after)
         SELECT object_key, 'dataset deleted', ? FROM data_items WHERE dataset_id = ?`,
      )
      .bind(deleteAfter, dataset.id),
    ...orphanDerivedObjects(db, "dataset deleted", deleteAfter, "dataset_id = ?", [dataset.id]),
    db.prepare("DELETE FROM data_items WHERE dataset_id = ?").bind(dataset.id),
    db.prepare("DELETE FROM grants WHERE dataset_id = ?").bind(dataset.id),
    db.prepare("DELETE FROM datasets WHERE id = ?").bind(dataset.id),
  ]);
}

/** Gives an account read or write access to a dataset (replacing an earlier grant). */
export async function grantAccess(
  db: D1Database,
  datasetId: string,
  accountId: string,
  permission: "read" | "write",
  now: string,
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO grants (dataset_id, account_id, permission, granted_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (dataset_id, account_id) DO UPDATE SET permission = excluded.permission, granted_at = excluded.granted_at`,
    )
    .bind(datasetId, accountId, permission, now)
    .run();
}

/** Who holds a grant on a dataset, by account name. */
export async function listGrants(
  db: D1Database,
  datasetId: string,
): Promise<{ accountName: string; permission: "read" | "write"; grantedAt: string }[]> {
  const { results } = await db
    .prepare(
      `SELECT a.name AS accountName, g.permission AS permission, g.granted_at AS grantedAt
       FROM grants g JOIN accounts a ON a.id = g.account_id WHERE g.dataset_id = ? ORDER BY a.name`,
    )
    .bind(datasetId)
    .all<{ accountName: string; permission: "read" | "write"; grantedAt: string }>();
  return results;
}

/** The account name of whoever uploaded a data item's current version. */
export async function uploaderName(db: D1Database, itemId: string): Promise<string | null> {
  return db
    .prepare(
      `SELECT a.name AS name FROM data_items i JOIN users u ON u.id = i.uploaded_by JOIN accounts a ON a.id = u.account_id
       WHERE i.id = ?`,
    )
    .bind(itemId)
    .first<string>("name");
}

/** Removes an account's grant; false when there was none. */
export async function revokeAccess(db: D1Database, datasetId: string, accountId: string): Promise<boolean> {
  const result = await db
    .prepare("DELETE FROM grants WHERE dataset_id = ? AND account_id = ?")
    .bind(datasetId, accountId)
    .run();
  return result.meta.changes === 1;
}

/** Account id by name, or null. */
export async function findAccountId(db: D1Database, name: string): Promise<string | null> {
  const row = await db.prepare("SELECT id FROM accounts WHERE name = ?").bind(name).first<{ id: string }>();
  return row?.id ?? null;
}

/** One data item as a listing shows it: its current version's figures and whether it is query-ready. */
export interface DataItemSummary {
  name: string;
  version: string;
  size: number;
  rowCount: number;
  uploadedAt: string;
  /** Its column images are built, or its table store is ready. */
  queryReady: boolean;
}

/** The data items of a dataset with their current versions' figures, by name. */
export async function listDataItems(db: D1Database, datasetId: string): Promise<DataItemSummary[]> {
  const { results } = await db
    .prepare(
      `SELECT name, version, size, row_count AS rowCount, uploaded_at AS uploadedAt,
              (column_images IS NOT NULL OR json_extract(table_store, '$.state') IS 'ready') AS queryReady
       FROM data_items WHERE dataset_id = ? ORDER BY name`,
    )
    .bind(datasetId)
    .all<Omit<DataItemSummary, "queryReady"> & { queryReady: number }>();
  return results.map((row) => ({ ...row, queryReady: row.queryReady === 1 }));
}

/** Deletes one data item; its object becomes an orphan in the same transaction. False when there was none. */
export async function deleteDataItem(
  db: D1Database,
  datasetId: string,
  name: string,
  deleteAfter: string,
): Promise<boolean> {
  const results = await db.batch([
    db
      .prepare(
        `INSERT OR IGNORE INTO orphan_objects (object_key, reason, delete_after)
         SELECT object_key, 'data item deleted', ? FROM data_items WHERE dataset_id = ? AND name = ?`,
      )
      .bind(deleteAfter, datasetId, name),
    ...orphanDerivedObjects(db, "data item deleted", deleteAfter, "dataset_id = ? AND name = ?", [datasetId, name]),
    db.prepare("DELETE FROM data_items WHERE dataset_id = ? AND name = ?").bind(datasetId, name),
  ]);
  // The last statement deletes the item.
  return results.at(-1)?.meta.changes === 1;
}

/** An upload's version as it becomes the data item's current one. */
export type NewVersion = Omit<DataItemRecord, "id" | "uploadedAt" | "columnImages" | "tableStore"> & {
  uploadedBy: string;
};

/**
 * Makes a fully stored, valid upload the data item's current version, in one
 * transaction: the replaced version's object becomes an orphan (deleted after
 * the grace period) and the new object stops being one.
 */
export async function commitDataItemVersion(
  db: D1Database,
  version: NewVersion,
  now: string,
  replacedDeleteAfter: string,
): Promise<void> {
  await db.batch([
    db
      .prepare(
        `INSERT OR IGNORE INTO orphan_objects (object_key, reason, delete_after)
         SELECT object_key, 'replaced by a new version', ? FROM data_items WHERE dataset_id = ? AND name = ?`,
      )
      .bind(replacedDeleteAfter, version.datasetId, version.name),
    ...orphanDerivedObjects(db, "replaced by a new version", replacedDeleteAfter, "dataset_id = ? AND name = ?", [
      version.datasetId,
      version.name,
    ]),
    db
      .prepare(
        `INSERT INTO data_items (id, dataset_id, name, version, object_key, size, row_count, schema, delivery_type,
                                 content_hash, uploaded_by, uploaded_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (dataset_id, name) DO UPDATE SET version = excluded.version, object_key = excluded.object_key,
           size = excluded.size, row_count = excluded.row_count, schema = excluded.schema,
           delivery_type = excluded.delivery_type, content_hash = excluded.content_hash,
           uploaded_by = excluded.uploaded_by, uploaded_at = excluded.uploaded_at, column_images = NULL,
           table_store = NULL`,
      )
      .bind(
        randomToken(16),
        version.datasetId,
        version.name,
        version.version,
        version.objectKey,
        version.size,
        version.rowCount,
        version.schema,
        version.deliveryType,
        version.contentHash,
        version.uploadedBy,
        now,
        now,
      ),
    db.prepare("DELETE FROM orphan_objects WHERE object_key = ?").bind(version.objectKey),
    db.prepare("UPDATE datasets SET updated_at = ? WHERE id = ?").bind(now, version.datasetId),
  ]);
}

/**
 * Records the column images built for one version of a data item, if that
 * version is still the current one, and takes their keys off the orphan
 * list in the same transaction. False when the version was replaced or
 * deleted meanwhile: the images belong to nothing and the caller removes them.
 */
export async function recordColumnImages(
  db: D1Database,
  item: { datasetId: string; name: string; version: string },
  images: string,
  keys: string[],
): Promise<boolean> {
  const [updated] = await db.batch([
    db
      .prepare(
        "UPDATE data_items SET column_images = ? WHERE dataset_id = ? AND name = ? AND version = ? AND column_images IS NULL",
      )
      .bind(images, item.datasetId, item.name, item.version),
    ...adoptColumnImageKeys(db, item, keys, images),
  ]);
  return updated?.meta.changes === 1;
}

/**
 * Statements that take column-image keys off the orphan list, each only
 * while the version is current and has images recorded (exactly `images`,
 * when given). recordColumnImages runs them with its update; a build that
 * finds the same version's images recorded by another delivery runs them
 * alone, to keep the keys the catalog now points at.
 */
export function adoptColumnImageKeys(
  db: D1Database,
  item: { datasetId: string; name: string; version: string },
  keys: string[],
  images?: string,
): D1PreparedStatement[] {
  const recorded = images === undefined ? "column_images IS NOT NULL" : "column_images = ?";
  const current = `SELECT 1 FROM data_items WHERE dataset_id = ? AND name = ? AND version = ? AND ${recorded}`;
  const values = [item.datasetId, item.name, item.version, ...(images === undefined ? [] : [images])];
  return keys.map((key) =>
    db.prepare(`DELETE FROM orphan_objects WHERE object_key = ? AND EXISTS (${current})`).bind(key, ...values),
  );
}

/**
 * Statements that list, as orphans, what was derived from the matching data
 * items' versions: their column images in R2 and their table stores (keyed
 * `table-store/<object key>`, emptied by the sweep).
 */
function orphanDerivedObjects(
  db: D1Database,
  reason: string,
  deleteAfter: string,
  where: string,
  values: string[],
): D1PreparedStatement[] {
  return [
    db
      .prepare(
        `INSERT OR IGNORE INTO orphan_objects (object_key, reason, delete_after)
         SELECT json_extract(j.value, '$.key'), ?, ?
         FROM data_items, json_each(data_items.column_images, '$.columns') AS j WHERE ${where}`,
      )
      .bind(reason, deleteAfter, ...values),
    db
      .prepare(
        `INSERT OR IGNORE INTO orphan_objects (object_key, reason, delete_after)
         SELECT '${TABLE_STORE_KEY_PREFIX}' || object_key, ?, ? FROM data_items WHERE table_store IS NOT NULL AND ${where}`,
      )
      .bind(reason, deleteAfter, ...values),
  ];
}

/**
 * Records the state of a version's table store (JSON), if that version is
 * still the current one; `from` says which state it must be in now (null:
 * none). False when the version was replaced or deleted, or moved on.
 */
export async function recordTableStore(
  db: D1Database,
  item: { datasetId: string; name: string; version: string },
  state: string,
  from: "none" | "building",
): Promise<boolean> {
  const now = from === "none" ? "table_store IS NULL" : "json_extract(table_store, '$.state') = 'building'";
  const result = await db
    .prepare(`UPDATE data_items SET table_store = ? WHERE dataset_id = ? AND name = ? AND version = ? AND ${now}`)
    .bind(state, item.datasetId, item.name, item.version)
    .run();
  return result.meta.changes === 1;
}
