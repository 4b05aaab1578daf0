import type { FinalStatus, QueryEnd, QueryRow } from "./query-record";
import type { Parameters } from "./sql/parameters";

/**
 * The D1 table `queries`: each user's history of queries. A row is written
 * when a query is submitted (owner, SQL and parameters, creation time, Idempotency-Key,
 * Callback URL),
 * and once more when the query ends, by its Durable Object (`recordEnd`);
 * the cron then only takes the result away (`recordResultDeleted`). A
 * query's completion webhook attempts (webhook_deliveries) are read with it.
 */

interface Row {
  id: string;
  user_id: string;
  sql: string;
  parameters: string | null;
  created_at: string;
  status: FinalStatus | null;
  message: string | null;
  updated_at: string | null;
  size: number | null;
  row_count: number | null;
  bytes_loaded: number | null;
  peak_memory_bytes: number | null;
  timings: string | null;
  engine: "sqljs" | "store" | null;
  result_key: string | null;
  result_columns: string | null;
  expires_at: string | null;
  callback_url: string | null;
  reuse_key: string | null;
  reused_from: string | null;
  /** The latest row of webhook_deliveries, as JSON. */
  last_delivery: string | null;
}

const COLUMNS = `id, user_id, sql, parameters, created_at, status, message, updated_at, size, row_count, bytes_loaded,
  peak_memory_bytes, timings, engine, result_key, result_columns, expires_at, callback_url, reuse_key, reused_from,
  (SELECT json_object('attempt', attempt, 'at', at, 'statusCode', status_code, 'error', error,
     'delivered', json(iif(delivered, 'true', 'false')), 'nextAttemptAt', next_attempt_at)
   FROM webhook_deliveries WHERE query_id = queries.id ORDER BY attempt DESC LIMIT 1) AS last_delivery`;

function fromRow(row: Row): QueryRow {
  return {
    queryId: row.id,
    ownerUserId: row.user_id,
    sql: row.sql,
    parameters: row.parameters === null ? null : (JSON.parse(row.parameters) as Parameters),
    createdAt: row.created_at,
    reused: row.reused_from !== null,
    end: row.status && {
      status: row.status,
      message: row.message ?? "",
      updatedAt: row.updated_at ?? row.created_at,
      size: row.size ?? 0,
      rowCount: row.row_count,
      bytesLoaded: row.bytes_loaded,
      peakMemoryBytes: row.peak_memory_bytes,
      timings: row.timings === null ? null : JSON.parse(row.timings),
      engine: row.engine,
      resultKey: row.result_key,
      resultColumns: row.result_columns === null ? null : JSON.parse(row.result_columns),
      expiresAt: row.expires_at,
      reuseKey: row.reuse_key,
    },
    callback:
      row.callback_url === null
        ? null
        : {
            url: row.callback_url,
            lastDelivery: row.last_delivery === null ? null : JSON.parse(row.last_delivery),
          },
  };
}

/** Who submitted what, when: the part of a row written at submit. */
export type NewRow = Omit<QueryRow, "end" | "callback" | "reused"> & { callback?: QueryRow["callback"] };

/** Records a submitted query; false when its Idempotency-Key is already taken (a concurrent submit won). */
export async function insertQuery(db: D1Database, row: NewRow, idempotencyKey: string | null): Promise<boolean> {
  const inserted = await db
    .prepare(
      `INSERT INTO queries (id, user_id, sql, parameters, idempotency_key, created_at, callback_url)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    )
    .bind(...submitValues(row, idempotencyKey))
    .run();
  return inserted.meta.changes === 1;
}

export async function findQuery(db: D1Database, queryId: string): Promise<QueryRow | null> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM queries WHERE id = ?`).bind(queryId).first<Row>();
  return row && fromRow(row);
}

export async function findByIdempotencyKey(db: D1Database, userId: string, key: string): Promise<QueryRow | null> {
  const row = await db
    .prepare(`SELECT ${COLUMNS} FROM queries WHERE user_id = ? AND idempotency_key = ?`)
    .bind(userId, key)
    .first<Row>();
  return row && fromRow(row);
}

/** Forgets a query that was never accepted (refused, or its submit failed part way). */
export async function deleteQuery(db: D1Database, queryId: string): Promise<void> {
  await db.prepare("DELETE FROM queries WHERE id = ?").bind(queryId).run();
}

/** Where a page of a user's history starts: after this query, newest first. */
export interface HistoryCursor {
  createdAt: string;
  id: string;
}

/** Up to `limit` of a user's queries, newest first, after `cursor`. */
export async function listQueries(
  db: D1Database,
  userId: string,
  limit: number,
  cursor: HistoryCursor | null,
): Promise<QueryRow[]> {
  const { results } = await db
    .prepare(
      `SELECT ${COLUMNS} FROM queries
       WHERE user_id = ?1 AND (?2 IS NULL OR created_at < ?2 OR (created_at = ?2 AND id < ?3))
       ORDER BY created_at DESC, id DESC LIMIT ?4`,
    )
    .bind(userId, cursor?.createdAt ?? null, cursor?.id ?? null, limit)
    .all<Row>();
  return results.map(fromRow);
}

/**
 * Records a query that answers from an earlier query's result (reuse.ts),
 * ended from the start; false when its Idempotency-Key is already taken.
 */
export async function insertReusedQuery(
  db: D1Database,
  row: NewRow,
  idempotencyKey: string | null,
  end: QueryEnd,
  sourceQueryId: string,
): Promise<boolean> {
  const inserted = await db
    .prepare(
      `INSERT INTO queries (id, user_id, sql, parameters, idempotency_key, created_at, callback_url, reused_from,
         status, message, updated_at, size, row_count, bytes_loaded, peak_memory_bytes, timings, engine, result_key,
         result_columns, expires_at, reuse_key)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)
       ON CONFLICT DO NOTHING`,
    )
    .bind(...submitValues(row, idempotencyKey), sourceQueryId, ...endValues(end))
    .run();
  return inserted.meta.changes === 1;
}

/** The values of a submit, in the column order of `insertQuery` and `insertReusedQuery` (id … callback_url). */
function submitValues(row: NewRow, idempotencyKey: string | null) {
  return [
    row.queryId,
    row.ownerUserId,
    row.sql,
    row.parameters === null ? null : JSON.stringify(row.parameters),
    idempotencyKey,
    row.createdAt,
    row.callback?.url ?? null,
  ];
}

/**
 * The succeeded query with this reuse key whose result is kept the longest,
 * if that is beyond `keptBeyond`; null otherwise. Only queries that ran have
 * a key: one that reused a result shares its source's and expires no later.
 */
export async function findReusable(db: D1Database, reuseKey: string, keptBeyond: string): Promise<QueryRow | null> {
  const row = await db
    .prepare(
      `SELECT ${COLUMNS} FROM queries
       WHERE reuse_key = ?1 AND result_key IS NOT NULL AND status = 'succeeded' AND expires_at > ?2
       ORDER BY expires_at DESC LIMIT 1`,
    )
    .bind(reuseKey, keptBeyond)
    .first<Row>();
  return row && fromRow(row);
}

/** The values of an end, in the column order of `recordEnd` and `insertReusedQuery` (status … reuse_key). */
function endValues(end: QueryEnd) {
  return [
    end.status,
    end.message,
    end.updatedAt,
    end.size,
    end.rowCount,
    end.bytesLoaded,
    end.peakMemoryBytes,
    end.timings && JSON.stringify(end.timings),
    end.engine,
    end.resultKey,
    end.resultColumns && JSON.stringify(end.resultColumns),
    end.expiresAt,
    end.reuseKey,
  ];
}

/** Writes how a query ended, once: a second end (a retried write, a late watchdog) leaves the first. */
export async function recordEnd(db: D1Database, queryId: string, end: QueryEnd): Promise<void> {
  await db
    .prepare(
      `UPDATE queries SET status = ?2, message = ?3, updated_at = ?4, size = ?5, row_count = ?6, bytes_loaded = ?7,
         peak_memory_bytes = ?8, timings = ?9, engine = ?10, result_key = ?11, result_columns = ?12, expires_at = ?13,
         reuse_key = ?14
       WHERE id = ?1 AND status IS NULL`,
    )
    .bind(queryId, ...endValues(end))
    .run();
}

/** Results whose retention ended by `now`, oldest first. */
export async function dueResults(
  db: D1Database,
  now: string,
  limit: number,
): Promise<{ queryId: string; resultKey: string }[]> {
  const { results } = await db
    .prepare(
      `SELECT id AS queryId, result_key AS resultKey FROM queries
       WHERE result_key IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
    )
    .bind(now, limit)
    .all<{ queryId: string; resultKey: string }>();
  return results;
}

/** Whether a row still in its retention at `now` points to this result object (a query that reused it, or its source). */
export async function resultStillHeld(db: D1Database, resultKey: string, now: string): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS held FROM queries WHERE result_key = ? AND expires_at > ? LIMIT 1")
    .bind(resultKey, now)
    .first<{ held: number }>();
  return row !== null;
}

/** The result's object was deleted: the query stays succeeded, and says its result is gone. */
export async function recordResultDeleted(db: D1Database, queryId: string, now: string): Promise<void> {
  await db
    .prepare(
      `UPDATE queries SET result_key = NULL, result_purged_at = ?2, updated_at = ?2,
         message = 'Succeeded; the result has expired and was deleted.'
       WHERE id = ?1`,
    )
    .bind(queryId, now)
    .run();
}

/** Rows created by `cutoff` whose end they do not have: live queries, ends not yet written, submits that failed. */
export async function rowsWithoutEnd(db: D1Database, cutoff: string, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT id FROM queries WHERE status IS NULL AND created_at <= ? ORDER BY created_at LIMIT ?")
    .bind(cutoff, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}
