import { findDataItem, type DataItemRecord } from "../catalog/access";
import { settings } from "../config";
import { adoptColumnImageKeys, recordColumnImages, recordTableStore } from "../catalog/datasets";
import { columnImageKey } from "../storage/keys";
import { deleteOrphanNow, markOrphan } from "../storage/orphans";
import { isoSeconds, nowSeconds } from "../util/time";
import { buildColumnImages } from "./engine/build-images";
import { IMAGE_FORMAT, VALUES_PER_RECORD, type ColumnImages } from "./engine/column-images";
import { TransientError } from "./run-limits";
import { STORE_MAX_COLUMNS } from "./store/store-sql";
import { parseTableStoreState, tableStoreStub, type TableStoreState } from "./store/store-state";
import { parseTableLayout } from "./table-layout";
import { openObjectStream } from "../storage/object-stream";

/** The queue message that asks for a version's query-ready form: column images, or a table store. */
export interface PrepareMessage {
  prepare: { datasetId: string; name: string; version: string };
  /** The API Worker's QUERY_MEMORY_BUDGET_BYTES: the engine Worker has no settings of its own. */
  memoryBudgetBytes: number;
  /** TABLE_STORE_MIN_ROWS and TABLE_STORE_MAX_BYTES (absent from older messages: column images only). */
  storeMinRows?: number;
  maxStoreBytes?: number;
}

/** Images of a build that dies with its Worker are swept after this long. */
const BUILD_ABANDONED_AFTER_SECONDS = 24 * 3600;

export type PrepareOutcome = "built" | "stale" | "already built" | { failed: string };

/**
 * Prepares one version of a data item for queries: a table store when
 * getsTableStore, column images otherwise.
 */
export async function prepareItem(env: Env, message: PrepareMessage): Promise<PrepareOutcome> {
  const item = await findDataItem(env.DB, message.prepare.datasetId, message.prepare.name);
  if (!item || item.version !== message.prepare.version) return "stale";
  if (message.maxStoreBytes !== undefined && getsTableStore(item, message.storeMinRows))
    return prepareTableStore(env, item, message.maxStoreBytes);
  return prepareColumnImages(env, item, message.memoryBudgetBytes);
}

/**
 * Whether a version gets a table store: at least TABLE_STORE_MIN_ROWS rows,
 * and no more columns than a store's SQLite takes in a table (wider items
 * keep column images and sql.js).
 */
function getsTableStore(item: DataItemRecord, storeMinRows: number | undefined): boolean {
  return (
    storeMinRows !== undefined &&
    item.rowCount >= storeMinRows &&
    parseTableLayout(item.schema).columns.length <= STORE_MAX_COLUMNS
  );
}

/**
 * Fills the version's table store (a SQLite Durable Object, see
 * store/table-store.ts) and records it as ready. The catalog says
 * "building" first, so a version replaced or deleted meanwhile lists the
 * store as an orphan and the sweep empties it; a build that cannot succeed
 * is recorded as failed (queries then read the CSV in sql.js) and emptied.
 * A store that stops mid-build throws, and the consumer retries.
 */
async function prepareTableStore(env: Env, item: DataItemRecord, maxStoreBytes: number): Promise<PrepareOutcome> {
  const state = parseTableStoreState(item.tableStore);
  if (state?.state === "ready") return "already built";
  if (state?.state === "failed") return { failed: state.message };
  const target = { datasetId: item.datasetId, name: item.name, version: item.version };
  if (!state && !(await recordTableStore(env.DB, target, JSON.stringify({ state: "building" }), "none"))) {
    const current = await findDataItem(env.DB, item.datasetId, item.name);
    if (current?.version !== item.version || parseTableStoreState(current.tableStore)?.state !== "building")
      return "stale";
  }
  const store = tableStoreStub(env, item.objectKey);
  const built = await store
    .build(
      { objectKey: item.objectKey, layout: parseTableLayout(item.schema), rows: item.rowCount, name: item.name },
      maxStoreBytes,
    )
    .catch((error: unknown) => {
      throw new TransientError(`the table store of ${item.name} stopped while it was built: ${String(error)}`);
    });
  const next: TableStoreState = built.ok
    ? { state: "ready", rows: built.rows, bytes: built.bytes }
    : { state: "failed", message: built.message };
  if (!built.ok) await store.empty();
  // Replaced or deleted meanwhile: the store is already listed as an orphan, and the sweep empties it.
  if (!(await recordTableStore(env.DB, target, JSON.stringify(next), "building"))) return "stale";
  return built.ok ? "built" : { failed: built.message };
}

/**
 * Builds and records the column images of one version of a data item, so
 * queries on it read images instead of parsing the CSV (prepareItem found
 * the version current); one that already has images is left alone. The keys are
 * listed as orphans before anything is written and taken off the list only
 * in the transaction that records them, so a build that fails or loses the
 * race with a newer upload leaves nothing behind. Storage errors throw (the
 * consumer retries); a file that cannot be built is reported and skipped —
 * its queries keep reading the CSV.
 */
async function prepareColumnImages(env: Env, item: DataItemRecord, memoryBudgetBytes: number): Promise<PrepareOutcome> {
  if (item.columnImages) return "already built";
  const target = { datasetId: item.datasetId, name: item.name, version: item.version };
  const layout = parseTableLayout(item.schema);
  const keys = layout.columns.map((_, index) => columnImageKey(item.objectKey, index));
  const abandonedAfter = isoSeconds(nowSeconds() + BUILD_ABANDONED_AFTER_SECONDS);
  for (const key of keys) await markOrphan(env.DB, key, "column image being built", abandonedAfter);
  const discard = () => Promise.all(keys.map((key) => deleteOrphanNow(env.DB, env.BUCKET, key)));

  const built = await buildColumnImages(
    layout,
    { rows: item.rowCount, bytes: item.size, name: `${item.name}` },
    {
      open: () => openObjectStream(env.BUCKET, item.objectKey),
      store: async (index, image) => void (await env.BUCKET.put(keys[index]!, image)),
    },
    memoryBudgetBytes,
  );
  if (!built.ok) {
    await discard();
    return { failed: built.message };
  }
  const images: ColumnImages = {
    format: IMAGE_FORMAT,
    valuesPerRecord: VALUES_PER_RECORD,
    rows: item.rowCount,
    columns: keys.map((key, index) => ({ key, bytes: built.bytes[index]! })),
  };
  if (await recordColumnImages(env.DB, target, JSON.stringify(images), keys)) return "built";
  // The same version's images were recorded by another build meanwhile (a message delivered twice, or the cron's
  // request beside the upload's): the keys are theirs, just overwritten with the same images. Deleting them would
  // leave the catalog pointing at nothing; keep them, and off the orphan list while the version is current.
  const current = await findDataItem(env.DB, target.datasetId, target.name);
  if (current?.version === target.version && current.columnImages) {
    await env.DB.batch(adoptColumnImageKeys(env.DB, target, keys));
    return "already built";
  }
  await discard();
  return "stale";
}

/**
 * Asks the queue to build the query-ready form of a data item's current
 * version, unless COLUMN_IMAGES is off. Never
 * fails the caller, which has already committed the upload: a lost request
 * only means queries read the CSV until the cron asks again (see
 * requestMissingPreparation). `later` takes the send to the queue off the
 * caller's path: locally the build queue lives in the long lane's process,
 * which a long statement can hold.
 */
export async function requestPreparation(
  env: Env,
  item: { datasetId: string; name: string },
  later?: (send: Promise<void>) => void,
): Promise<void> {
  try {
    if (!settings(env).columnImages) return;
    const current = await findDataItem(env.DB, item.datasetId, item.name);
    if (!current || current.columnImages || current.tableStore) return;
    const message: PrepareMessage = { prepare: { ...item, version: current.version }, ...prepareSettings(env) };
    // From now on a query that needs the store waits for it rather than trying sql.js first.
    if (getsTableStore(current, message.storeMinRows))
      await recordTableStore(env.DB, message.prepare, JSON.stringify({ state: "building" }), "none");
    const sent = env.BUILD_QUEUE.send(message).then(
      () => undefined,
      (error: unknown) => logRequestError(item, error),
    );
    if (later) later(sent);
    else await sent;
  } catch (error) {
    logRequestError(item, error);
  }
}

function logRequestError(item: { datasetId: string; name: string }, error: unknown): void {
  console.error(JSON.stringify({ step: "request column images", item, error: String(error) }));
}

/** The cron's part: versions uploaded before `uploadedBefore` that still have no images are asked for again. */
export async function requestMissingPreparation(env: Env, uploadedBefore: string, limit = 20): Promise<number> {
  if (!settings(env).columnImages) return 0;
  const { results } = await env.DB.prepare(
    `SELECT dataset_id AS datasetId, name, version FROM data_items
     WHERE column_images IS NULL AND (table_store IS NULL OR json_extract(table_store, '$.state') = 'building')
       AND uploaded_at <= ? ORDER BY uploaded_at LIMIT ?`,
  )
    .bind(uploadedBefore, limit)
    .all<PrepareMessage["prepare"]>();
  const carried = prepareSettings(env);
  if (results.length > 0)
    await env.BUILD_QUEUE.sendBatch(results.map((prepare) => ({ body: { prepare, ...carried } })));
  return results.length;
}

/** The settings a preparation needs, from the API Worker's configuration. */
function prepareSettings(env: Env): Omit<PrepareMessage, "prepare"> {
  const { memoryBudgetBytes, storeMinRows, maxStoreBytes } = settings(env).query;
  return { memoryBudgetBytes, storeMinRows, maxStoreBytes };
}
