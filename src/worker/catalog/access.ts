import type { Principal } from "./accounts";

/** Whoever looks at the catalog: a caller of the API, or the owner of a query being run. */
export type Viewer = Pick<Principal, "accountId">;
import { isAccountName, isDataName, isDatasetName } from "./names";

/** What a caller may do with a dataset (docs/api.md). */
export type Access = "none" | "read" | "write" | "owner";

export interface DatasetRecord {
  id: string;
  accountId: string;
  accountName: string;
  name: string;
  visibility: "private" | "public";
  description: string;
  createdAt: string;
  updatedAt: string;
}

export interface DataItemRecord {
  id: string;
  datasetId: string;
  name: string;
  version: string;
  objectKey: string;
  size: number;
  rowCount: number;
  schema: string;
  deliveryType: "RAW" | "GZIP";
  contentHash: string;
  uploadedAt: string;
  /** The query-ready column images of this version (JSON, see query/engine/column-images.ts); null until built. */
  columnImages: string | null;
  /** The table store of this version (JSON, see query/store/store-state.ts); null when it has none (yet). */
  tableStore: string | null;
}

/**
 * The visibility rule, the one place it is written: a caller sees a dataset
 * it owns, holds a grant on, or that is public; writing needs ownership or
 * a write grant.
 */
export function accessOf(
  principal: Viewer,
  dataset: { accountId: string; visibility: string },
  grant: string | null,
): Access {
  if (dataset.accountId === principal.accountId) return "owner";
  if (grant === "write") return "write";
  if (grant === "read" || dataset.visibility === "public") return "read";
  return "none";
}

export const canRead = (access: Access) => access !== "none";
export const canWrite = (access: Access) => access === "write" || access === "owner";

const DATASET_COLUMNS = `d.id AS id, d.account_id AS accountId, a.name AS accountName, d.name AS name,
  d.visibility AS visibility, d.description AS description, d.created_at AS createdAt, d.updated_at AS updatedAt`;

/**
 * A dataset and the caller's access to it, or null when it does not exist or
 * its name breaks the rules. Callers must treat `access: "none"` exactly like
 * null, so that what a caller may not see is indistinguishable from nothing.
 */
export async function findDataset(
  db: D1Database,
  principal: Viewer,
  accountName: string,
  datasetName: string,
): Promise<{ dataset: DatasetRecord; access: Access } | null> {
  if (!isAccountName(accountName) || !isDatasetName(datasetName)) return null;
  const row = await db
    .prepare(
      `SELECT ${DATASET_COLUMNS}, g.permission AS grantPermission
       FROM datasets d JOIN accounts a ON a.id = d.account_id
       LEFT JOIN grants g ON g.dataset_id = d.id AND g.account_id = ?
       WHERE a.name = ? AND d.name = ?`,
    )
    .bind(principal.accountId, accountName, datasetName)
    .first<DatasetRecord & { grantPermission: string | null }>();
  if (!row) return null;
  const { grantPermission, ...dataset } = row;
  return { dataset, access: accessOf(principal, dataset, grantPermission) };
}

/** A data item the caller may read, or null for one that does not exist or that the caller may not see. */
export async function findReadableDataItem(
  db: D1Database,
  principal: Viewer,
  accountName: string,
  datasetName: string,
  dataName: string,
): Promise<{ dataset: DatasetRecord; item: DataItemRecord } | null> {
  if (!isDataName(dataName)) return null;
  const found = await findDataset(db, principal, accountName, datasetName);
  if (!found || !canRead(found.access)) return null;
  const item = await findDataItem(db, found.dataset.id, dataName);
  return item ? { dataset: found.dataset, item } : null;
}

/** A data item of a dataset by name, without any access check. */
export async function findDataItem(db: D1Database, datasetId: string, name: string): Promise<DataItemRecord | null> {
  return db
    .prepare(
      `SELECT id, dataset_id AS datasetId, name, version, object_key AS objectKey, size, row_count AS rowCount,
              schema, delivery_type AS deliveryType, content_hash AS contentHash, uploaded_at AS uploadedAt,
              column_images AS columnImages, table_store AS tableStore
       FROM data_items WHERE dataset_id = ? AND name = ?`,
    )
    .bind(datasetId, name)
    .first<DataItemRecord>();
}

/** The datasets of an account that the caller sees, by name. */
export async function listVisibleDatasets(
  db: D1Database,
  principal: Viewer,
  accountName: string,
): Promise<DatasetRecord[]> {
  if (!isAccountName(accountName)) return [];
  const { results } = await db
    .prepare(
      `SELECT ${DATASET_COLUMNS}, g.permission AS grantPermission
       FROM datasets d JOIN accounts a ON a.id = d.account_id
       LEFT JOIN grants g ON g.dataset_id = d.id AND g.account_id = ?
       WHERE a.name = ? ORDER BY d.name`,
    )
    .bind(principal.accountId, accountName)
    .all<DatasetRecord & { grantPermission: string | null }>();
  return results
    .filter((row) => canRead(accessOf(principal, row, row.grantPermission)))
    .map(({ grantPermission: _grant, ...dataset }) => dataset);
}

/**
 * Names of the data items the caller may read, as `[account, dataset, data]`:
 * those of `accountName`.`datasetName` first, then the rest of that account,
 * then the caller's own, then the others; at most `most`. For a "did you
 * mean" that must never name what the caller may not see.
 */
export async function readableItemNames(
  db: D1Database,
  principal: Viewer,
  accountName: string,
  datasetName: string,
  most: number,
): Promise<[string, string, string][]> {
  const { results } = await db
    .prepare(
      `SELECT a.name AS accountName, d.name AS datasetName, i.name AS dataName, d.account_id AS accountId,
              d.visibility AS visibility, g.permission AS grantPermission
       FROM data_items i JOIN datasets d ON d.id = i.dataset_id JOIN accounts a ON a.id = d.account_id
       LEFT JOIN grants g ON g.dataset_id = d.id AND g.account_id = ?1
       WHERE d.account_id = ?1 OR g.account_id IS NOT NULL OR d.visibility = 'public'
       ORDER BY a.name = ?2 AND d.name = ?3 DESC, a.name = ?2 DESC, d.account_id = ?1 DESC, a.name, d.name, i.name
       LIMIT ?4`,
    )
    .bind(principal.accountId, accountName, datasetName, most)
    .all<{
      accountName: string;
      datasetName: string;
      dataName: string;
      accountId: string;
      visibility: string;
      grantPermission: string | null;
    }>();
  // The SQL narrows; the visibility rule decides.
  return results
    .filter((row) => canRead(accessOf(principal, row, row.grantPermission)))
    .map((row) => [row.accountName, row.datasetName, row.dataName]);
}

/** A dataset as the caller's catalog shows it: the caller's access, whether a grant gives it, and its item count. */
export interface CatalogEntry extends DatasetRecord {
  access: Exclude<Access, "none">;
  /** The caller holds a grant on it (shared with them), as opposed to owning it or seeing it because it is public. */
  granted: boolean;
  dataCount: number;
}

/**
 * Every dataset the caller sees, across accounts: its own, those it holds a
 * grant on, and public ones; by account, then name.
 */
export async function listCatalog(db: D1Database, principal: Viewer): Promise<CatalogEntry[]> {
  const { results } = await db
    .prepare(
      `SELECT ${DATASET_COLUMNS}, g.permission AS grantPermission,
              (SELECT count(*) FROM data_items i WHERE i.dataset_id = d.id) AS dataCount
       FROM datasets d JOIN accounts a ON a.id = d.account_id
       LEFT JOIN grants g ON g.dataset_id = d.id AND g.account_id = ?1
       WHERE d.account_id = ?1 OR g.account_id IS NOT NULL OR d.visibility = 'public'
       ORDER BY a.name, d.name`,
    )
    .bind(principal.accountId)
    .all<DatasetRecord & { grantPermission: string | null; dataCount: number }>();
  return results.flatMap(({ grantPermission, ...row }) => {
    const access = accessOf(principal, row, grantPermission);
    return access === "none" ? [] : [{ ...row, access, granted: access !== "owner" && grantPermission !== null }];
  });
}

/** The most items one answer of listCatalogColumns lists. */
export const CATALOG_COLUMNS_MOST = 5000;

/** A data item's column names, for completion in an editor. */
export interface ItemColumns {
  accountName: string;
  datasetName: string;
  dataName: string;
  columns: string[];
}

/**
 * The column names of every data item in the datasets the caller sees
 * (listCatalog's), by account, dataset, then item, at most `most` items;
 * `truncated` when there were more. One catalog query: the names come from
 * the stored schemas in D1, nothing is read from R2.
 */
export async function listCatalogColumns(
  db: D1Database,
  principal: Viewer,
  most: number,
): Promise<{ items: ItemColumns[]; truncated: boolean }> {
  const datasets = await listCatalog(db, principal);
  if (datasets.length === 0) return { items: [], truncated: false };
  const { results } = await db
    .prepare(
      `SELECT j.key AS datasetIndex, i.name AS dataName,
              (SELECT json_group_array(json_extract(c.value, '$.Name'))
                 FROM json_each(i.schema, '$.TableDefinition.Columns') c) AS columns
       FROM json_each(?1) j JOIN data_items i ON i.dataset_id = j.value
       ORDER BY j.key, i.name
       LIMIT ?2`,
    )
    .bind(JSON.stringify(datasets.map((dataset) => dataset.id)), most + 1)
    .all<{ datasetIndex: number; dataName: string; columns: string }>();
  const items = results.slice(0, most).map((row) => {
    const dataset = datasets[row.datasetIndex]!;
    return {
      accountName: dataset.accountName,
      datasetName: dataset.name,
      dataName: row.dataName,
      columns: JSON.parse(row.columns) as string[],
    };
  });
  return { items, truncated: results.length > most };
}
