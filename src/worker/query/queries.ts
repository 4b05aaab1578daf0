import type { Principal } from "../catalog/accounts";
import type { FairShare, QueryLimits } from "../config";
import { randomToken } from "../util/crypto";
import { nowSeconds } from "../util/time";
import { enqueueCompletion } from "../webhooks/completion";
import { findQueryItem } from "./run-claimed-query";
import {
  deleteQuery,
  findByIdempotencyKey,
  findQuery,
  insertQuery,
  insertReusedQuery,
  listQueries,
  type HistoryCursor,
} from "./history";
import { FINISHED, NO_FIGURES, queryRecord, type QueryRecord, type QueryRow, type QueryStatus } from "./query-record";
import { findReusableResult, reusedEnd } from "./reuse";
import type { QueryText } from "./query-text";
import { canonicalParameters } from "./sql/parameters";

/** The message the queue carries for a query: just the id; its row and its Durable Object hold the rest. */
export interface QueryMessage {
  queryId: string;
}

const QUERY_ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;
/** Waiting for a query's end looks at it every 10 ms at first, then less often, up to every 50 ms. */
const WAIT_POLL_MS = { first: 10, step: 5, most: 50 };

/** A new query id: 16 random bytes as base64url, never beginning with "-", which a command line would read as an option. */
export function newQueryId(): string {
  for (;;) {
    const id = randomToken(16);
    if (!id.startsWith("-")) return id;
  }
}

/** The Durable Object that owns a query's live state. */
export function queryStub(env: Env, queryId: string) {
  return env.QUERY_STATE.get(env.QUERY_STATE.idFromName(queryId));
}

/** The Durable Object that holds a user's share of the engine. */
export function userQueriesStub(env: Env, userId: string) {
  return env.USER_QUERIES.get(env.USER_QUERIES.idFromName(userId));
}

/** What a caller submits. */
export interface QuerySubmission {
  query: QueryText;
  idempotencyKey: string | null;
  /** A URL the SSRF guard accepted (src/worker/webhooks/callback-url.ts), or null. */
  callback: { url: string } | null;
  /** false: run it even if an identical earlier query's result is kept (`"Reuse": false`). */
  reuse: boolean;
}

export type SubmitResult =
  | { ok: true; queryId: string; status: QueryStatus; replayed: boolean; reused: boolean }
  | { ok: false; reason: "idempotency_conflict" | "idempotency_busy" | "not_queued" }
  | { ok: false; reason: "too_many_waiting"; waiting: number };

/**
 * Records a query (its D1 row, then its Durable Object) and enqueues it, or
 * puts it in line behind the owner's running queries (UserQueries); a full
 * line refuses it and keeps nothing. A submit that fails part way takes back
 * what it did (`not_queued`), so trying again can succeed. With an
 * idempotency key, a retried submit of the same SQL and parameters returns
 * the first query instead of a new one (with its Callback), and finishes
 * submitting it if an earlier attempt failed before its Durable Object had
 * it. A query that may reuse an earlier result (reuse.ts) is recorded as
 * succeeded at once (its completion webhook handed to the queue): it never
 * enters its owner's line, so it counts against no limit on running or
 * waiting queries.
 */
export async function submitQuery(
  env: Env,
  principal: Principal,
  submission: QuerySubmission,
  limits: QueryLimits,
  share: FairShare,
): Promise<SubmitResult> {
  const { query, idempotencyKey, callback } = submission;
  if (idempotencyKey) {
    const earlier = await findByIdempotencyKey(env.DB, principal.userId, idempotencyKey);
    if (earlier) return resume(env, earlier, query, limits, share);
  }
  // Milliseconds, not seconds: the history lists queries newest first, and several can come within a second.
  const row = {
    queryId: newQueryId(),
    ownerUserId: principal.userId,
    sql: query.sql,
    parameters: query.parameters,
    createdAt: new Date().toISOString(),
    callback: callback && { url: callback.url, lastDelivery: null },
  };
  const source = submission.reuse ? await reusable(env, principal, query, limits) : null;
  const inserted = source
    ? await insertReusedQuery(
        env.DB,
        row,
        idempotencyKey,
        reusedEnd(source.end, nowSeconds(), limits.resultRetentionSeconds),
        source.queryId,
      )
    : await insertQuery(env.DB, row, idempotencyKey);
  if (!inserted) {
    // Another request with the same key won the race; if it has taken its row back since, this one is tried again.
    const earlier = idempotencyKey && (await findByIdempotencyKey(env.DB, principal.userId, idempotencyKey));
    return earlier ? resume(env, earlier, query, limits, share) : { ok: false, reason: "not_queued" };
  }
  if (!source) return enqueue(env, { ...row, end: null, reused: false }, limits, share, idempotencyKey !== null);
  if (callback && !(await enqueueCompletion(env, row.queryId))) {
    // Its webhook could not be handed on: the row is taken back, so that a retry with the same key submits it anew.
    await deleteQuery(env.DB, row.queryId).catch((error: unknown) =>
      console.error(JSON.stringify({ queryId: row.queryId, step: "withdraw: delete the row", error: String(error) })),
    );
    return { ok: false, reason: "not_queued" };
  }
  return { ok: true, queryId: row.queryId, status: "succeeded", replayed: false, reused: true };
}

/** An earlier query whose result this one may answer from (reuse.ts); a catalog that cannot be read means none. */
async function reusable(env: Env, principal: Principal, query: QueryText, limits: QueryLimits) {
  try {
    return await findReusableResult(
      env.DB,
      query,
      (reference) => findQueryItem(env, principal, reference),
      nowSeconds(),
      limits.resultRetentionSeconds,
    );
  } catch (error) {
    console.error(JSON.stringify({ step: "look for a result to reuse", error: String(error) }));
    return null;
  }
}

/** A submit whose key has a row already: the same query, submitted now if an earlier attempt could not. */
async function resume(
  env: Env,
  row: QueryRow,
  query: QueryText,
  limits: QueryLimits,
  share: FairShare,
): Promise<SubmitResult> {
  if (row.sql !== query.sql || canonicalParameters(row.parameters) !== canonicalParameters(query.parameters))
    return { ok: false, reason: "idempotency_conflict" };
  if (row.end) return { ok: true, queryId: row.queryId, status: row.end.status, replayed: true, reused: row.reused };
  return enqueue(env, row, limits, share, true);
}

/**
 * Creates the query's state and puts it in line (sending it to the queue
 * when a slot is free). A state that exists already means an earlier submit
 * did this: it is answered as it is. Under an Idempotency-Key the state is
 * this attempt's until it is in line (QueryState.accept), so that a
 * concurrent submit with the key is never given a QueryId this one may
 * still take back: it is told to come back (`busy`).
 */
async function enqueue(
  env: Env,
  row: QueryRow,
  limits: QueryLimits,
  share: FairShare,
  keyed: boolean,
): Promise<SubmitResult> {
  const { queryId, ownerUserId } = row;
  const attempt = keyed ? crypto.randomUUID() : undefined;
  let reached: "row" | "state" | "line" = "row";
  try {
    const { outcome, record } = await queryStub(env, queryId).create({
      queryId,
      ownerUserId,
      limits,
      callback: row.callback !== null,
      attempt,
    });
    if (outcome === "busy") return { ok: false, reason: "idempotency_busy" };
    if (outcome === "exists") return { ok: true, queryId, status: record.status, replayed: true, reused: false };
    reached = "state";
    // After create: once in line, the query may be sent by another query's end, and must exist to be claimed.
    const entered = await userQueriesStub(env, ownerUserId).enter(queryId, share);
    if (!entered.ok) {
      await withdraw(env, row, "state", attempt);
      return { ok: false, reason: "too_many_waiting", waiting: entered.waiting };
    }
    reached = "line";
    if (entered.admitted) await env.QUERY_QUEUE.send({ queryId } satisfies QueryMessage);
  } catch (error) {
    console.error(JSON.stringify({ queryId, step: `submit (after the ${reached})`, error: String(error) }));
    await withdraw(env, row, reached, attempt);
    return { ok: false, reason: "not_queued" };
  }
  if (attempt) await accept(env, queryId, attempt);
  return { ok: true, queryId, status: "queued", replayed: false, reused: false };
}

/** Ends this attempt's hold on the state; if that fails, other submits with the key wait out SUBMIT_HOLD_MS. */
async function accept(env: Env, queryId: string, attempt: string): Promise<void> {
  try {
    await queryStub(env, queryId).accept(attempt);
  } catch (error) {
    console.error(JSON.stringify({ queryId, step: "accept the submit", error: String(error) }));
  }
}

/**
 * Takes back a submit that did not complete: its place in line, its state,
 * its row, each on its own; the row stays when another attempt with the key
 * has taken the state over. What cannot be taken back is finished by a retry
 * with the same key (a row without state is submitted again), or by the
 * state's alarm (a state without its place in line is put back in line).
 */
async function withdraw(
  env: Env,
  row: QueryRow,
  reached: "row" | "state" | "line",
  attempt: string | undefined,
): Promise<void> {
  let taken = false;
  const steps: [string, () => Promise<void>][] = [];
  // An `enter` whose answer was lost may have put it in line, as a `create` may have made the state.
  if (reached !== "row") steps.push(["leave the line", () => userQueriesStub(env, row.ownerUserId).leave(row.queryId)]);
  steps.push([
    "discard the state",
    async () => {
      taken = !(await queryStub(env, row.queryId).discard(attempt));
    },
  ]);
  steps.push(["delete the row", async () => void (taken || (await deleteQuery(env.DB, row.queryId)))]);
  for (const [step, run] of steps) {
    try {
      await run();
    } catch (error) {
      console.error(JSON.stringify({ queryId: row.queryId, step: `withdraw: ${step}`, error: String(error) }));
    }
  }
}

/** What a wait for a query's end saw last: its status, and its message once its Durable Object was read. */
export interface WaitedQuery {
  status: QueryStatus;
  message: string | null;
}

/**
 * Polls a query until it has ended or `deadline` (epoch ms) has passed; what
 * it saw last. Each look at the Durable Object is cut off at the deadline
 * too, so a busy or unreachable one never holds the caller past it.
 */
export async function waitForEnd(
  env: Env,
  queryId: string,
  status: QueryStatus,
  deadline: number,
): Promise<WaitedQuery> {
  const stub = queryStub(env, queryId);
  let seen: WaitedQuery = { status, message: null };
  for (let polls = 0; !FINISHED.has(seen.status) && Date.now() < deadline; polls++) {
    const delay = Math.min(WAIT_POLL_MS.most, WAIT_POLL_MS.first + polls * WAIT_POLL_MS.step, deadline - Date.now());
    await new Promise((resolve) => setTimeout(resolve, delay));
    let live;
    try {
      live = await beforeDeadline(stub.get(), deadline);
    } catch (error) {
      // The submit went through: its answer (the QueryId) matters more than one more look.
      console.error(JSON.stringify({ queryId, step: "wait for its end", error: String(error) }));
      break;
    }
    if (!live) break;
    if (live.value) seen = { status: live.value.status, message: live.value.message };
  }
  return seen;
}

/** `work`'s value, or null when `deadline` (epoch ms) passes first; the work itself goes on, unawaited. */
export async function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<{ value: T } | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work.then((value) => ({ value })), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A queued query waiting for its owner's turn says so in its message, with how many of theirs wait before it,
 * or until when a cool-down after an overrun of the time limit holds them.
 */
export async function withTurn(env: Env, record: QueryRecord, share: FairShare): Promise<QueryRecord> {
  if (record.status !== "queued") return record;
  const turn = await userQueriesStub(env, record.ownerUserId).turn(record.queryId);
  if (turn === null) return record;
  const { ahead, coolDownUntil } = turn;
  if (coolDownUntil !== null) {
    const seconds = Math.max(1, Math.ceil((coolDownUntil - Date.now()) / 1000));
    const clock = new Date(coolDownUntil).toISOString().slice(11, 19);
    return {
      ...record,
      message: `Queued: your recent queries ran past the time limit, so your next ones wait until ${clock} UTC (${seconds} s) behind other users' queries (QUERY_OVERRUN_COOLDOWN_SECONDS).`,
    };
  }
  const before = ahead === 0 ? "it is next" : `${ahead} of yours wait before it`;
  const stopping = await cancelledButRunning(env, turn.running);
  // A cancel takes effect at the statement's next row; one that returns none holds its slot until the time limit.
  const held =
    stopping.length === 0
      ? ""
      : stopping.length === 1
        ? ` Your cancelled query ${stopping[0]} holds a slot until its statement stops (at its next row, or at the time limit: QUERY_TIME_LIMIT_SECONDS).`
        : ` Your cancelled queries ${stopping.join(", ")} hold slots until their statements stop (at their next row, or at the time limit: QUERY_TIME_LIMIT_SECONDS).`;
  return {
    ...record,
    message: `Queued: waiting for its turn; ${share.maxRunning} of your queries ${share.maxRunning === 1 ? "runs" : "run"} at once (QUERY_MAX_RUNNING_PER_USER), and ${before}.${held}`,
  };
}

/** Which of `queryIds` (at most a user's running share) were cancelled but have not let their slot go yet. */
async function cancelledButRunning(env: Env, queryIds: string[]): Promise<string[]> {
  const states = await Promise.all(queryIds.map((queryId) => queryStub(env, queryId).get()));
  return queryIds.filter((_, i) => states[i]?.status === "cancelled");
}

/** The caller's own query's row, or null: someone else's query answers exactly like a missing one. */
async function ownRow(env: Env, principal: Principal, queryId: string): Promise<QueryRow | null> {
  if (!QUERY_ID_PATTERN.test(queryId)) return null;
  const row = await findQuery(env.DB, queryId);
  return row && row.ownerUserId === principal.userId ? row : null;
}

/**
 * A query as its owner sees it: its row alone once it has ended, else with
 * its Durable Object's state; null for a row whose submit never made one.
 */
export async function recordOfRow(env: Env, row: QueryRow): Promise<QueryRecord | null> {
  if (row.end) return queryRecord(row, row.end);
  const live = await queryStub(env, row.queryId).get();
  if (!live) return null;
  if (live.published) {
    // It ended after the row was read: the row has the figures now.
    const again = await findQuery(env.DB, row.queryId);
    if (again?.end) return queryRecord(again, again.end);
  }
  return queryRecord(row, { ...(live.figures ?? NO_FIGURES), ...live });
}

/** The caller's own query, or null: someone else's query answers exactly like a missing one. */
export async function findOwnQuery(env: Env, principal: Principal, queryId: string): Promise<QueryRecord | null> {
  const row = await ownRow(env, principal, queryId);
  return row && recordOfRow(env, row);
}

export type CancelResult = { ok: true; record: QueryRecord } | { ok: false; endedAs: QueryStatus | null };

/** Cancels the caller's own queued or running query; refused with the state it ended in, or null for no such query. */
export async function cancelOwnQuery(env: Env, principal: Principal, queryId: string): Promise<CancelResult> {
  const row = await ownRow(env, principal, queryId);
  if (!row) return { ok: false, endedAs: null };
  if (row.end) return { ok: false, endedAs: row.end.status };
  const step = await queryStub(env, queryId).cancel();
  if (!step.ok) return { ok: false, endedAs: step.record?.status ?? null };
  return { ok: true, record: queryRecord(row, { ...NO_FIGURES, ...step.record }) };
}

/** One page of the caller's queries, newest first, with the cursor of the next page. */
export async function listOwnQueries(
  env: Env,
  principal: Principal,
  page: { limit: number; cursor: HistoryCursor | null },
): Promise<{ records: QueryRecord[]; next: HistoryCursor | null }> {
  const rows = await listQueries(env.DB, principal.userId, page.limit + 1, page.cursor);
  const shown = rows.slice(0, page.limit);
  // Only queries that have not ended ask their Durable Object.
  const records = (await Promise.all(shown.map((row) => recordOfRow(env, row)))).filter(
    (record): record is QueryRecord => record !== null,
  );
  const last = shown.at(-1);
  return { records, next: rows.length > page.limit && last ? { createdAt: last.createdAt, id: last.queryId } : null };
}
