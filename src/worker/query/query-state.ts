import { DurableObject } from "cloudflare:workers";
import { withStorageRetries } from "../storage/busy-retry";
import { isoSeconds, nowSeconds } from "../util/time";
import type { QueryLimits } from "../config";
import { enqueueCompletion } from "../webhooks/completion";
import { recordEnd } from "./history";
import {
  FINISHED,
  isFinished,
  NO_FIGURES,
  type FinalStatus,
  type QueryFigures,
  type QueryStatus,
  type RunOutcome,
} from "./query-record";
import { limitStops, overranTimeLimit } from "./run-limits";
import type { QueryMessage } from "./queries";
import type { UserQueries } from "./user-queries";
import { plural } from "../util/text";

const KEY = "query";

/**
 * What a query's Durable Object keeps: the query's live state. Who
 * submitted what and when is its D1 row's (history.ts), and so is how it
 * ended once the row has it.
 */
export interface LiveQuery {
  queryId: string;
  /** The user whose share of the engine (UserQueries) the query takes its slot from. */
  ownerUserId: string;
  /** The limits in force when it was submitted; the engine Worker runs it under these (absent on older records). */
  limits?: QueryLimits;
  status: QueryStatus;
  /** What it is doing, or how it ended. */
  message: string;
  updatedAt: string;
  /** The figures it ended with, kept only until its D1 row has them. */
  figures: QueryFigures | null;
  /** Its D1 row holds how it ended: from then on the row answers for it. */
  published: boolean;
  /** It was submitted with a Callback: once published, its end goes to the webhook queue (absent on older records). */
  callback?: boolean;
  /** Its end has been handed to the webhook queue. */
  announced?: boolean;
  /**
   * The submit that created it has not yet put it in line: another submit
   * with its Idempotency-Key is told to come back rather than given a
   * QueryId the first may still take back (absent: accepted).
   */
  submitting?: { attempt: string; since: number } | null;
  /** Moved to the engine's long lane and not yet sent there (the alarm sends it). */
  toLongLane?: boolean;
}

/** A step that may be refused: the state after it, or the state that refused it (null: no such query). */
export type StepResult<T extends LiveQuery = LiveQuery> =
  { ok: true; record: T } | { ok: false; record: LiveQuery | null };

/** A record written before the D1 row kept how queries end (migration 0007): the whole query was here. */
type EarlierRecord = Omit<LiveQuery, "figures" | "published"> &
  Omit<QueryFigures, "engine" | "reuseKey"> & { engine?: "sqljs" | "store" };

function current(stored: LiveQuery | EarlierRecord): LiveQuery {
  if ("published" in stored) return stored;
  const { queryId, ownerUserId, limits, status, message, updatedAt } = stored;
  const figures: QueryFigures = {
    size: stored.size,
    rowCount: stored.rowCount,
    bytesLoaded: stored.bytesLoaded,
    peakMemoryBytes: stored.peakMemoryBytes,
    timings: stored.timings,
    engine: stored.engine ?? null,
    resultKey: stored.resultKey,
    resultColumns: stored.resultColumns,
    expiresAt: stored.expiresAt,
    reuseKey: null,
  };
  return {
    queryId,
    ownerUserId,
    limits,
    status,
    message,
    updatedAt,
    figures: FINISHED.has(status) ? figures : null,
    published: false,
  };
}

/**
 * One query's state machine (docs/api.md): queued → running → succeeded |
 * failed, and queued | running → cancelled. It owns the live state and the
 * watchdog alarm, and hands how the query ended to its D1 row; it never
 * runs SQL. Each method is one atomic step, since a Durable Object handles
 * one call at a time.
 */
export class QueryState extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, withStorageRetries(env));
  }

  private async load(): Promise<LiveQuery | null> {
    const stored = await this.ctx.storage.get<LiveQuery | EarlierRecord>(KEY);
    return stored ? current(stored) : null;
  }

  private async save(record: LiveQuery, message?: string): Promise<LiveQuery> {
    const next = { ...record, message: message ?? record.message, updatedAt: isoSeconds(nowSeconds()) };
    await this.ctx.storage.put(KEY, next);
    return next;
  }

  /**
   * Records how the query ended and hands it to the D1 row, then gives the
   * query's slot back to its owner's share (UserQueries), unless the engine
   * still holds it (`release`); an end for the time limit starts a cool-down there.
   */
  private async ended(
    record: LiveQuery,
    status: FinalStatus,
    message: string,
    options: { figures?: QueryFigures; holdSlot?: boolean } = {},
  ): Promise<LiveQuery> {
    const saved = await this.save(
      { ...record, status, figures: options.figures ?? NO_FIGURES, published: false },
      message,
    );
    const published = await this.publish(saved);
    const overran = status === "failed" && overranTimeLimit(message);
    if (!options.holdSlot) await this.slots(record, (slots) => slots.leave(record.queryId, { overran }));
    return published;
  }

  /**
   * Writes how the query ended into its D1 row, then forgets the figures:
   * the row answers for the query from then on. If the write fails, the
   * object keeps them, answers with them, and its alarm tries again.
   */
  private async publish(record: LiveQuery): Promise<LiveQuery> {
    if (!isFinished(record.status)) return record;
    try {
      await recordEnd(this.env.DB, record.queryId, {
        ...(record.figures ?? NO_FIGURES),
        status: record.status,
        message: record.message,
        updatedAt: record.updatedAt,
      });
    } catch (error) {
      console.error(JSON.stringify({ queryId: record.queryId, step: "record the end in D1", error: String(error) }));
      await this.ctx.storage.setAlarm(Date.now() + PUBLISH_RETRY_MS);
      return record;
    }
    const published = { ...record, figures: null, published: true };
    await this.ctx.storage.put(KEY, published);
    return this.announce(published);
  }

  /**
   * Hands a published end to the webhook queue (src/worker/webhooks), once;
   * the delivery reads the D1 row. If the queue refuses, the alarm tries again.
   */
  private async announce(record: LiveQuery): Promise<LiveQuery> {
    if (!record.callback || record.announced || !record.published) return record;
    if (!(await enqueueCompletion(this.env, record.queryId))) {
      await this.ctx.storage.setAlarm(Date.now() + PUBLISH_RETRY_MS);
      return record;
    }
    const announced = { ...record, announced: true };
    await this.ctx.storage.put(KEY, announced);
    return announced;
  }

  /** Tells the owner's share (UserQueries) about the query; a failure only delays the slot (its lease). */
  private async slots(record: LiveQuery, tell: (slots: DurableObjectStub<UserQueries>) => Promise<void>) {
    try {
      await tell(this.env.USER_QUERIES.get(this.env.USER_QUERIES.idFromName(record.ownerUserId)));
    } catch (error) {
      console.error(JSON.stringify({ queryId: record.queryId, step: "tell the owner's share", error: String(error) }));
    }
  }

  /**
   * Records a new query as queued (`created`); calling it again returns the
   * first state unchanged (`exists`). With an `attempt`, the state stays
   * the attempt's until `accept`: another attempt meanwhile is `busy`, unless
   * the first has held it for SUBMIT_HOLD_MS (its request died), when the
   * new attempt takes it over (`created`).
   */
  async create(init: {
    queryId: string;
    ownerUserId: string;
    limits: QueryLimits;
    callback?: boolean;
    attempt?: string;
  }): Promise<{ outcome: "created" | "exists" | "busy"; record: LiveQuery }> {
    const { attempt, ...fields } = init;
    const submitting = attempt ? { attempt, since: Date.now() } : null;
    const existing = await this.load();
    if (existing) {
      const held = existing.submitting;
      // Once it left the queue, whoever submitted it had put it in line.
      if (!held || held.attempt === attempt || existing.status !== "queued")
        return { outcome: "exists", record: existing };
      if (Date.now() - held.since < SUBMIT_HOLD_MS) return { outcome: "busy", record: existing };
      const taken = { ...existing, submitting };
      await this.ctx.storage.put(KEY, taken);
      return { outcome: "created", record: taken };
    }
    const record: LiveQuery = {
      ...fields,
      callback: fields.callback ?? false,
      announced: false,
      status: "queued",
      message: "Queued; waiting for a worker to run it.",
      updatedAt: isoSeconds(nowSeconds()),
      figures: null,
      published: false,
      submitting,
    };
    await this.ctx.storage.put(KEY, record);
    await this.ctx.storage.setAlarm(Date.now() + QUEUED_CHECK_MS);
    return { outcome: "created", record };
  }

  /** The attempt that created the state has put it in line: submits with its key get its QueryId from now on. */
  async accept(attempt: string): Promise<void> {
    const record = await this.load();
    if (record?.submitting?.attempt === attempt) await this.ctx.storage.put(KEY, { ...record, submitting: null });
  }

  /**
   * Forgets a query that was never accepted (its owner's line was full, or
   * its submit failed part way); false, keeping it, when another attempt has
   * taken it over.
   */
  async discard(attempt?: string): Promise<boolean> {
    const record = await this.load();
    const held = record?.submitting;
    if (held && attempt && held.attempt !== attempt) return false;
    await this.ctx.storage.deleteAll();
    return true;
  }

  /** The query's state, or null if it was never created; an end the D1 row does not have yet is handed on first. */
  async get(): Promise<LiveQuery | null> {
    const record = await this.load();
    return record && !record.published ? this.publish(record) : record;
  }

  /**
   * Moves a queued query to running for one attempt and arms the watchdog.
   * Anything else (already running, finished, cancelled) is refused, so a
   * redelivered message never runs a query twice.
   */
  async claim(): Promise<StepResult<LiveQuery & { limits: QueryLimits }>> {
    const record = await this.load();
    if (!record || record.status !== "queued") return { ok: false, record };
    // Queued before the limits were recorded with each query (an older version of the service).
    if (!record.limits) {
      const failed = await this.ended(
        record,
        "failed",
        "Failed: the query was queued before an upgrade of the service; submit it again.",
      );
      return { ok: false, record: failed };
    }
    const limits = record.limits;
    const started = await this.save({ ...record, status: "running", toLongLane: false }, "Running: loading the data.");
    // The watchdog: a consumer that dies leaves the query running; the alarm fails it.
    await this.ctx.storage.setAlarm(Date.now() + limits.timeLimitMs + WATCHDOG_GRACE_MS);
    await this.slots(record, (slots) => slots.started(record.queryId));
    return { ok: true, record: { ...started, limits } };
  }

  /** Updates the human message of a running query (what it is doing). */
  async progress(message: string): Promise<LiveQuery | null> {
    const record = await this.load();
    if (!record || record.status !== "running") return record;
    return this.save(record, message);
  }

  /**
   * Sets a running query's message and gives it `forMs` more before the
   * watchdog fails it: the engine waits (for a table store being built), then
   * re-arms the watchdog with the time limit when the query starts running.
   */
  async rearm(message: string, forMs: number): Promise<LiveQuery | null> {
    const record = await this.load();
    if (!record || record.status !== "running") return record;
    await this.ctx.storage.setAlarm(Date.now() + forMs + WATCHDOG_GRACE_MS);
    return this.save(record, message);
  }

  /** Puts a running query back in the queue after a transient error, saying why, for the retry to claim. */
  async requeue(message: string): Promise<LiveQuery | null> {
    const record = await this.load();
    if (!record || record.status !== "running") return record;
    await this.ctx.storage.setAlarm(Date.now() + QUEUED_CHECK_MS);
    return this.save({ ...record, status: "queued" }, message);
  }

  /**
   * Puts a running query back in the queue for the engine's long lane, and
   * sends it there from the alarm: locally the long lane's queue lives in
   * its process, which a long statement holds, and the quick lane must not
   * wait for it.
   */
  async toLongLane(message: string): Promise<LiveQuery | null> {
    const record = await this.load();
    if (!record || record.status !== "running") return record;
    await this.ctx.storage.setAlarm(Date.now());
    return this.save({ ...record, status: "queued", toLongLane: true }, message);
  }

  /** Records how a run ended. A query cancelled meanwhile stays cancelled. */
  async finish(outcome: RunOutcome): Promise<LiveQuery | null> {
    const record = await this.load();
    if (!record || FINISHED.has(record.status)) return record;
    await this.ctx.storage.deleteAlarm();
    if (outcome.status === "succeeded") {
      const { status: _status, engine, ...result } = outcome;
      return this.ended(
        record,
        "succeeded",
        `Succeeded: ${plural(outcome.rowCount, "row")}, ${plural(outcome.size, "byte")}.`,
        {
          figures: { ...result, engine: engine ?? null },
        },
      );
    }
    return this.ended(record, "failed", outcome.message, {
      figures: {
        ...NO_FIGURES,
        engine: outcome.engine ?? null,
        bytesLoaded: outcome.bytesLoaded ?? null,
        peakMemoryBytes: outcome.peakMemoryBytes ?? null,
        timings: outcome.timings ? { queueWaitMs: 0, loadMs: 0, executeMs: 0, writeMs: 0, ...outcome.timings } : null,
      },
    });
  }

  /**
   * Cancels a queued or running query; a finished one is refused with its
   * state. A running query keeps its owner's slot until the engine has let
   * it go (`release`): the engine notices between rows, not inside a statement.
   */
  async cancel(): Promise<StepResult> {
    const record = await this.load();
    if (!record || FINISHED.has(record.status)) return { ok: false, record };
    await this.ctx.storage.deleteAlarm();
    const cancelled = await this.ended(record, "cancelled", "Cancelled by its owner.", {
      holdSlot: record.status === "running",
    });
    return { ok: true, record: cancelled };
  }

  /** The engine has stopped running a query that was cancelled meanwhile: its slot goes back. */
  async release(): Promise<void> {
    const record = await this.load();
    if (record && FINISHED.has(record.status)) await this.slots(record, (slots) => slots.leave(record.queryId));
  }

  /**
   * The watchdog: a query still running past its time limit failed (its
   * consumer died or hung); a query still queued is recovered if it was lost;
   * an end the D1 row could not take is written again, and one the webhook
   * queue could not take is handed to it again.
   */
  override async alarm(): Promise<void> {
    const record = await this.load();
    if (!record) return;
    if (record.status === "queued" && record.toLongLane) {
      try {
        await this.env.LONG_QUERY_QUEUE.send({ queryId: record.queryId } satisfies QueryMessage);
      } catch (error) {
        console.error(JSON.stringify({ queryId: record.queryId, step: "send to the long lane", error: String(error) }));
        await this.ctx.storage.setAlarm(Date.now() + LONG_LANE_RETRY_MS);
        return;
      }
      // Claimed, cancelled or moved again meanwhile: only a record still waiting to be sent is changed.
      const now = await this.load();
      if (now?.status === "queued" && now.toLongLane) await this.ctx.storage.put(KEY, { ...now, toLongLane: false });
      await this.ctx.storage.setAlarm(Date.now() + QUEUED_CHECK_MS);
      return;
    }
    if (record.status === "queued") {
      // Still queued: make sure its owner's share knows it and, if it holds a slot, that it is in the queue.
      await this.slots(record, (slots) => slots.recover(record.queryId));
      await this.ctx.storage.setAlarm(Date.now() + QUEUED_CHECK_MS);
      return;
    }
    if (record.status === "running") {
      await this.ended(record, "failed", limitStops.watchdog().message);
      return;
    }
    if (!record.published) await this.publish(record);
    else await this.announce(record);
  }
}

/**
 * The watchdog waits this long beyond the time limit: a run stops itself at
 * the limit, and one held past it (a store's statement) ends failed within
 * the limit plus 10 s (docs/limits.md).
 */
const WATCHDOG_GRACE_MS = 8_000;
/** A submit holds its query's state this long at most before another with its Idempotency-Key may take it over. */
const SUBMIT_HOLD_MS = 60_000;
/** How often a query still queued checks that it is not lost (a request that died between its steps, say). */
const QUEUED_CHECK_MS = 10 * 60_000;
/** After a failed send to the long lane, the object tries again this much later. */
const LONG_LANE_RETRY_MS = 5_000;
/** After a failed write of its end to D1 (or to the webhook queue), the object tries again this much later. */
const PUBLISH_RETRY_MS = 30_000;
