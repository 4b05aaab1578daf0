import { findReadableDataItem, readableItemNames, type Viewer } from "../catalog/access";
import { findUserById } from "../catalog/accounts";
import type { QueryLimits } from "../config";
import { resultObjectKey } from "../storage/keys";
import { isoSeconds, nowSeconds } from "../util/time";
import { parseColumnImages } from "./engine/column-images";
import { sampleItem } from "./engine/samples";
import { evaluateSql, nameOf, type LoadableItem, type QuerySource } from "./engine/evaluate-sql";
import { storedResultTarget } from "./result/stored-result";
import { reuseKey, type ReadVersion } from "./reuse";
import type { DataItemReference } from "./sql/table-names";
import { parseTableStoreState, tableStoreStub } from "./store/store-state";
import { parseTableLayout } from "./table-layout";
import type { QueryRow, QueryStatus, RunOutcome } from "./query-record";
import { openObjectStream } from "../storage/object-stream";

/** The parts of a query's Durable Object the run talks to. */
export interface QueryStateHandle {
  get(): Promise<{ status: QueryStatus } | null>;
  progress(message: string): Promise<unknown>;
  rearm(message: string, forMs: number): Promise<unknown>;
}

/**
 * Runs a query the consumer has claimed (its row says who submitted what,
 * when) with its owner's view of the catalog, writing the result to R2.
 * SQL-level problems come back as a failed outcome; storage errors are
 * thrown, so the consumer can retry them.
 */
export async function runClaimedQuery(
  env: Env,
  record: QueryRow,
  limits: QueryLimits,
  state: QueryStateHandle,
): Promise<RunOutcome | { status: "cancelled" }> {
  const queueWaitMs = Math.max(0, Date.now() - Date.parse(record.createdAt));
  const owner = await findUserById(env.DB, record.ownerUserId);
  if (!owner) return { status: "failed", message: "Failed: the account that submitted the query no longer exists." };

  // The version each name was last found at: the one the run read (a wait for a table store finds them again).
  const read = new Map<string, ReadVersion>();
  const source: QuerySource = {
    async find(reference) {
      const item = await findQueryItem(env, owner, reference);
      if (item) read.set(nameOf(reference), { reference, objectKey: item.objectKey });
      return item;
    },
    readableNames: (reference, most) => readableItemNames(env.DB, owner, reference.account, reference.dataset, most),
    async open(item: LoadableItem) {
      return openObjectStream(env.BUCKET, item.objectKey);
    },
    async openImage(key) {
      const object = await env.BUCKET.get(key);
      return object ? new Uint8Array(await object.arrayBuffer()) : null;
    },
    queryStore: (objectKey, request) => tableStoreStub(env, objectKey).query(request),
    sample: (item, used, count) => sampleItem(env, item, used, count),
  };
  const key = await resultObjectKey(record.queryId);
  const target = storedResultTarget(env.BUCKET, key);
  const query = { sql: record.sql, parameters: record.parameters };
  const outcome = await evaluateSql(
    query,
    {
      source,
      target,
      control: {
        cancelled: async () => (await state.get())?.status === "cancelled",
        progress: async (message) => void (await state.progress(message)),
        wait: async (message, forMs) => void (await state.rearm(message, forMs)),
      },
      queryId: record.queryId,
      resultKey: key,
    },
    withStoreDefaults(limits),
  );
  const timings = {
    queueWaitMs,
    loadMs: outcome.loadMs,
    executeMs: outcome.executeMs,
    writeMs: outcome.writeMs,
  };
  if (!outcome.ok) {
    if (outcome.cancelled) return { status: "cancelled" };
    return {
      status: "failed",
      engine: outcome.engine,
      message: outcome.message,
      bytesLoaded: outcome.bytesLoaded,
      peakMemoryBytes: heldInSqlJs(outcome),
      timings,
    };
  }
  return {
    status: "succeeded",
    engine: outcome.engine,
    size: outcome.size,
    rowCount: outcome.rowCount,
    bytesLoaded: outcome.bytesLoaded,
    peakMemoryBytes: heldInSqlJs(outcome),
    timings,
    resultKey: key,
    resultColumns: outcome.columns,
    expiresAt: isoSeconds(nowSeconds() + limits.resultRetentionSeconds),
    reuseKey: await reuseKey(query, [...read.values()]),
  };
}

/**
 * The data item behind a three-part name, as `viewer` may read it (the
 * visibility rule), with the catalog figures the engine plans by and its
 * version; null when it does not exist or `viewer` may not read it.
 */
export async function findQueryItem(
  env: Env,
  viewer: Viewer,
  reference: DataItemReference,
): Promise<(LoadableItem & { version: string }) | null> {
  const found = await findReadableDataItem(env.DB, viewer, reference.account, reference.dataset, reference.data);
  if (!found) return null;
  const { item } = found;
  const layout = parseTableLayout(item.schema);
  return {
    objectKey: item.objectKey,
    version: item.version,
    layout,
    rows: item.rowCount,
    bytes: item.size,
    images: parseColumnImages(item.columnImages, layout.columns.length),
    store: parseTableStoreState(item.tableStore),
  };
}

/** Queries recorded before table stores carry no store limits: those of the default configuration. */
function withStoreDefaults(limits: QueryLimits): QueryLimits {
  return {
    ...limits,
    storeMinRows: limits.storeMinRows ?? 250_000,
    maxStoreBytes: limits.maxStoreBytes ?? 8 * 1024 ** 3,
  };
}

/** PeakMemoryBytes is what sql.js held; a query run in a table store held none of it (null). */
function heldInSqlJs(outcome: { engine: string; peakMemoryBytes: number }): number | null {
  return outcome.engine === "store" ? null : outcome.peakMemoryBytes;
}
