import { DurableObject } from "cloudflare:workers";
import { isoSeconds, nowSeconds } from "../util/time";
import type { QueryLimits } from "../config";
import { FINISHED, type QueryRecord, type RunOutcome } from "./query-record";
import type { UserQueries } from "./user-queries";

const KEY = "query";

export type ClaimResult =
  { ok: true; record: QueryRecord & { limits: QueryLimits } } | { ok: false; record: QueryRecord | null };
export type CancelResult = { ok: true; record: QueryRecord } | { ok: false; record: QueryRecord | null };

/**
 * One query's state machine (DECISIONS §7): queued → running → succeeded |
 * failed, and queued | running → cancelled. It owns the state and the
 * watchdog alarm, and nothing else: it never runs SQL. Each method is one
 * atomic step, since a Durable Object handles one call at a time.
 */
export class QueryState extends DurableObject<Env> {
  private async load(): Promise<QueryRecord | null> {
    return (await this.ctx.storage.get<QueryRecord>(KEY)) ?? null;
  }

  private async save(record: QueryRecord, message?: string): Promise<QueryRecord> {
    const next = { ...record, message: message ?? record.message, updatedAt: isoSeconds(nowSeconds()) };
    await this.ctx.storage.put(KEY, next);
    return next;
  }

  /** Saves a finished record, then gives the query's slot back to its owner's share (UserQueries). */
  private async ended(record: QueryRecord, message: string): Promise<QueryRecord> {
    const saved = await this.save(record, message);
    await this.slots(record, (slots) => slots.leave(record.queryId));
    return saved;
  }

  /** Tells the owner's share (UserQueries) about the query; a failure only delays the slot (its lease). */
  private async slots(record: QueryRecord, tell: (slots: DurableObjectStub<UserQueries>) => Promise<void>) {
    try {
      await tell(this.env.USER_QUERIES.get(this.env.USER_QUERIES.idFromName(record.ownerUserId)));
    } catch (error) {
      console.error(JSON.stringify({ queryId: record.queryId, step: "tell the owner's share", error: String(error) }));
    }
  }

  /** Records a new query as queued; calling it again returns the first record unchanged. */
  async create(init: { queryId: string; ownerUserId: string; sql: string; limits: QueryLimits }): Promise<QueryRecord> {
    const existing = await this.load();
    if (existing) return existing;
    const nowMs = Date.now();
    const now = isoSeconds(Math.floor(nowMs / 1000));
    const record: QueryRecord = {
      ...init,
      createdAtMs: nowMs,
      status: "queued",
      message: "Queued; waiting for a worker to run it.",
      createdAt: now,
      updatedAt: now,
      size: 0,
      rowCount: null,
      bytesLoaded: null,
      peakMemoryBytes: null,
      timings: null,
      resultKey: null,
      resultColumns: null,
      expiresAt: null,
    };
    await this.ctx.storage.put(KEY, record);
    await this.ctx.storage.setAlarm(nowMs + QUEUED_CHECK_MS);
    return record;
  }

  /** Forgets a query that was refused before anyone saw it (its owner's line was full). */
  async discard(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }

  /** The query's record, or null if it was never created. */
  async get(): Promise<QueryRecord | null> {
    return this.load();
  }

  /**
   * Moves a queued query to running for one attempt and arms the watchdog.
   * Anything else (already running, finished, cancelled) is refused, so a
   * redelivered message never runs a query twice.
   */
  async claim(): Promise<ClaimResult> {
    const record = await this.load();
    if (!record || record.status !== "queued") return { ok: false, record };
    // Queued before the limits were recorded with each query (an older version of the service).
    if (!record.limits) {
      const failed = await this.ended(
        { ...record, status: "failed" },
        "Failed: the query was queued before an upgrade of the service; submit it again.",
      );
      return { ok: false, record: failed };
    }
    const limits = record.limits;
    const started = await this.save({ ...record, status: "running" }, "Running: loading the data.");
    // The watchdog: a consumer that dies leaves the query running; the alarm fails it.
    await this.ctx.storage.setAlarm(Date.now() + limits.timeLimitMs + WATCHDOG_GRACE_MS);
    await this.slots(record, (slots) => slots.started(record.queryId));
    return { ok: true, record: { ...started, limits } };
  }

  /** Updates the human message of a running query (what it is doing). */
  async progress(message: string): Promise<QueryRecord | null> {
    const record = await this.load();
    if (!record || record.status !== "running") return record;
    return this.save(record, message);
  }

  /**
   * Sets a running query's message and gives it `forMs` more before the
   * watchdog fails it: the engine waits (for a table store being built), then
   * re-arms the watchdog with the time limit when the query starts running.
   */
  async rearm(message: string, forMs: number): Promise<QueryRecord | null> {
    const record = await this.load();
    if (!record || record.status !== "running") return record;
    await this.ctx.storage.setAlarm(Date.now() + forMs + WATCHDOG_GRACE_MS);
    return this.save(record, message);
  }

  /** Puts a running query back in the queue after a transient error, for the retry to claim. */
  async requeue(reason: string): Promise<QueryRecord | null> {
    const record = await this.load();
    if (!record || record.status !== "running") return record;
    await this.ctx.storage.setAlarm(Date.now() + QUEUED_CHECK_MS);
    return this.save({ ...record, status: "queued" }, `Queued again after a transient error: ${reason}`);
  }

  /** Records how a run ended. A query cancelled meanwhile stays cancelled. */
  async finish(outcome: RunOutcome): Promise<QueryRecord | null> {
    const record = await this.load();
    if (!record || FINISHED.has(record.status)) return record;
    await this.ctx.storage.deleteAlarm();
    if (outcome.status === "succeeded") {
      const { status: _status, ...result } = outcome;
      return this.ended(
        { ...record, ...result, status: "succeeded" },
        `Succeeded: ${outcome.rowCount} rows, ${outcome.size} bytes.`,
      );
    }
    return this.ended(
      {
        ...record,
        status: "failed",
        engine: outcome.engine ?? record.engine,
        bytesLoaded: outcome.bytesLoaded ?? record.bytesLoaded,
        peakMemoryBytes: outcome.peakMemoryBytes ?? record.peakMemoryBytes,
        timings: outcome.timings
          ? { queueWaitMs: 0, loadMs: 0, executeMs: 0, writeMs: 0, ...outcome.timings }
          : record.timings,
      },
      outcome.message,
    );
  }

  /**
   * Cancels a queued or running query; a finished one is refused with its
   * record. A running query keeps its owner's slot until the engine has let
   * it go (`release`): the engine notices between rows, not inside a statement.
   */
  async cancel(): Promise<CancelResult> {
    const record = await this.load();
    if (!record || FINISHED.has(record.status)) return { ok: false, record };
    await this.ctx.storage.deleteAlarm();
    const cancelled = { ...record, status: "cancelled" as const };
    const message = "Cancelled by its owner.";
    return {
      ok: true,
      record: record.status === "running" ? await this.save(cancelled, message) : await this.ended(cancelled, message),
    };
  }

  /** The engine has stopped running a query that was cancelled meanwhile: its slot goes back. */
  async release(): Promise<void> {
    const record = await this.load();
    if (record && FINISHED.has(record.status)) await this.slots(record, (slots) => slots.leave(record.queryId));
  }

  /** Forgets the result once it has been deleted (retention). */
  async expireResult(): Promise<QueryRecord | null> {
    const record = await this.load();
    if (!record || record.status !== "succeeded" || record.resultKey === null) return record;
    return this.save({ ...record, resultKey: null }, "Succeeded; the result has expired and was deleted.");
  }

  /**
   * The watchdog: a query still running past its time limit failed (its
   * consumer died or hung); a query still queued is recovered if it was lost.
   */
  override async alarm(): Promise<void> {
    const record = await this.load();
    if (record?.status === "queued") {
      // Still queued: make sure its owner's share knows it and, if it holds a slot, that it is in the queue.
      await this.slots(record, (slots) => slots.recover(record.queryId));
      await this.ctx.storage.setAlarm(Date.now() + QUEUED_CHECK_MS);
      return;
    }
    if (!record || record.status !== "running") return;
    await this.ended(
      { ...record, status: "failed" },
      "Failed: the query did not finish within the time limit (the worker running it stopped or exceeded its CPU limit).",
    );
  }
}

/** The watchdog waits this long beyond the time limit, so a run that ends on time is never failed by it. */
const WATCHDOG_GRACE_MS = 30_000;
/** How often a query still queued checks that it is not lost (a request that died between its steps, say). */
const QUEUED_CHECK_MS = 10 * 60_000;
