import type { Principal } from "../catalog/accounts";
import type { FairShare, QueryLimits } from "../config";
import { randomToken } from "../util/crypto";
import type { QueryRecord } from "./query-record";

/** The message the queue carries for a query: just the id; the Durable Object holds the rest. */
export interface QueryMessage {
  queryId: string;
}

const QUERY_ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;

/** A new query id: 16 random bytes as base64url, never beginning with "-", which a command line would read as an option. */
export function newQueryId(): string {
  for (;;) {
    const id = randomToken(16);
    if (!id.startsWith("-")) return id;
  }
}

/** The Durable Object that owns a query's state. */
export function queryStub(env: Env, queryId: string) {
  return env.QUERY_STATE.get(env.QUERY_STATE.idFromName(queryId));
}

/** The Durable Object that holds a user's share of the engine. */
export function userQueriesStub(env: Env, userId: string) {
  return env.USER_QUERIES.get(env.USER_QUERIES.idFromName(userId));
}

export type SubmitResult =
  | { ok: true; queryId: string; record: QueryRecord; replayed: boolean }
  | { ok: false; reason: "idempotency_conflict" | "not_queued" }
  | { ok: false; reason: "too_many_waiting"; waiting: number };

/**
 * Records a query (D1 for the owner's history, its Durable Object for its
 * state) and enqueues it, or puts it in line behind the owner's running
 * queries (UserQueries); a full line refuses it and keeps nothing. With an
 * idempotency key, a retried submit of the same SQL returns the first query
 * instead of a new one.
 */
export async function submitQuery(
  env: Env,
  principal: Principal,
  sql: string,
  idempotencyKey: string | null,
  limits: QueryLimits,
  share: FairShare,
): Promise<SubmitResult> {
  if (idempotencyKey) {
    const earlier = await findByIdempotencyKey(env.DB, principal.userId, idempotencyKey);
    if (earlier) return replay(env, earlier, sql);
  }
  const queryId = newQueryId();
  // Milliseconds, not seconds: the history lists queries newest first, and several can come within a second.
  const inserted = await env.DB.prepare(
    `INSERT INTO queries (id, user_id, sql, idempotency_key, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT DO NOTHING`,
  )
    .bind(queryId, principal.userId, sql, idempotencyKey, new Date().toISOString())
    .run();
  if (inserted.meta.changes !== 1 && idempotencyKey) {
    // Another request with the same key won the race.
    const earlier = await findByIdempotencyKey(env.DB, principal.userId, idempotencyKey);
    if (earlier) return replay(env, earlier, sql);
  }
  const stub = queryStub(env, queryId);
  const record = await stub.create({ queryId, ownerUserId: principal.userId, sql, limits });
  // After create: once in line, the query may be sent by another query's end, and must exist to be claimed.
  let entered;
  try {
    entered = await userQueriesStub(env, principal.userId).enter(queryId, share);
  } catch (error) {
    await stub.finish({ status: "failed", message: "Failed: the query could not be queued; submit it again." });
    console.error(JSON.stringify({ queryId, enter: String(error) }));
    return { ok: false, reason: "not_queued" };
  }
  if (!entered.ok) {
    await stub.discard();
    await env.DB.prepare("DELETE FROM queries WHERE id = ?").bind(queryId).run();
    return { ok: false, reason: "too_many_waiting", waiting: entered.waiting };
  }
  if (!entered.admitted) return { ok: true, queryId, record, replayed: false };
  try {
    await env.QUERY_QUEUE.send({ queryId } satisfies QueryMessage);
  } catch (error) {
    await stub.finish({ status: "failed", message: "Failed: the query could not be queued; submit it again." });
    console.error(JSON.stringify({ queryId, enqueue: String(error) }));
    return { ok: false, reason: "not_queued" };
  }
  return { ok: true, queryId, record, replayed: false };
}

/** A queued query waiting for its owner's turn says so in its message, with how many of theirs wait before it. */
export async function withTurn(env: Env, record: QueryRecord, share: FairShare): Promise<QueryRecord> {
  if (record.status !== "queued") return record;
  const ahead = await userQueriesStub(env, record.ownerUserId).ahead(record.queryId);
  if (ahead === null) return record;
  const before = ahead === 0 ? "it is next" : `${ahead} of yours wait before it`;
  return {
    ...record,
    message: `Queued: waiting for its turn; ${share.maxRunning} of your queries ${share.maxRunning === 1 ? "runs" : "run"} at once (QUERY_MAX_RUNNING_PER_USER), and ${before}.`,
  };
}

async function findByIdempotencyKey(db: D1Database, userId: string, key: string) {
  return db
    .prepare("SELECT id, sql FROM queries WHERE user_id = ? AND idempotency_key = ?")
    .bind(userId, key)
    .first<{ id: string; sql: string }>();
}

async function replay(env: Env, earlier: { id: string; sql: string }, sql: string): Promise<SubmitResult> {
  if (earlier.sql !== sql) return { ok: false, reason: "idempotency_conflict" };
  const record = await queryStub(env, earlier.id).get();
  if (!record) return { ok: false, reason: "not_queued" };
  return { ok: true, queryId: earlier.id, record, replayed: true };
}

/** The caller's own query, or null: someone else's query answers exactly like a missing one. */
export async function findOwnQuery(env: Env, principal: Principal, queryId: string): Promise<QueryRecord | null> {
  if (!QUERY_ID_PATTERN.test(queryId)) return null;
  const record = await queryStub(env, queryId).get();
  return record && record.ownerUserId === principal.userId ? record : null;
}

/** One page of the caller's queries, newest first, with the cursor of the next page. */
export async function listOwnQueries(
  env: Env,
  principal: Principal,
  page: { limit: number; cursor: { createdAt: string; id: string } | null },
): Promise<{ records: QueryRecord[]; next: { createdAt: string; id: string } | null }> {
  const { results } = await env.DB.prepare(
    `SELECT id, created_at AS createdAt FROM queries
     WHERE user_id = ?1 AND (?2 IS NULL OR created_at < ?2 OR (created_at = ?2 AND id < ?3))
     ORDER BY created_at DESC, id DESC LIMIT ?4`,
  )
    .bind(principal.userId, page.cursor?.createdAt ?? null, page.cursor?.id ?? null, page.limit + 1)
    .all<{ id: string; createdAt: string }>();
  const rows = results.slice(0, page.limit);
  const records: QueryRecord[] = [];
  for (const record of await Promise.all(rows.map((row) => queryStub(env, row.id).get())))
    if (record) records.push(record);
  const last = rows[rows.length - 1];
  return {
    records,
    next: results.length > page.limit && last ? { createdAt: last.createdAt, id: last.id } : null,
  };
}
