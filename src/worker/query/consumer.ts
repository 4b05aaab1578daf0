import { resultIndexKey } from "../storage/keys";
import { findQuery } from "./history";
import { prepareItem, type PrepareMessage } from "./prepare-item";
import { queryStub, type QueryMessage } from "./queries";
import { FINISHED, type RunOutcome } from "./query-record";
import { QUICK_LANE_MS } from "./queues";
import { LongWork } from "./run-limits";
import { runClaimedQuery } from "./run-claimed-query";

/** What the queue carries: a query to run, or a data item version whose column images to build. */
export type WorkMessage = QueryMessage | PrepareMessage;

function isPrepare(body: WorkMessage): body is PrepareMessage {
  return "prepare" in body;
}

/** The outcome of a query whose row is gone: a submit taken back after its answer failed (queries.ts `withdraw`). */
const WITHDRAWN: RunOutcome = {
  status: "failed",
  message: "Failed: the submit of this query failed and was taken back; submit it again.",
};

/** Delay before retry n (1-based): 5 s, 20 s, 80 s … capped at 5 minutes. */
function backoffSeconds(attempts: number): number {
  return Math.min(300, 5 * 4 ** Math.max(0, attempts - 1));
}

/**
 * The query queue's consumer. Each message is claimed through the query's
 * Durable Object (a redelivered message, or one for a finished or cancelled
 * query, is acknowledged without work), run, and acknowledged only after its
 * outcome is recorded. A storage error puts the query back in the queue and
 * retries the message with backoff; after the last retry the dead-letter
 * consumer fails it.
 */
export async function consumeQueries(batch: MessageBatch<WorkMessage>, env: Env, quickLane = false): Promise<void> {
  for (const message of batch.messages) {
    if (isPrepare(message.body)) await consumePrepare(message as Message<PrepareMessage>, env);
    else await consumeQuery(message as Message<QueryMessage>, env, quickLane);
  }
}

/**
 * Runs one query message (see consumeQueries), under the limits recorded when
 * it was submitted. In the quick lane a query that needs more than its share
 * is put back in the queue and sent to the long lane, to be run there afresh.
 */
async function consumeQuery(message: Message<QueryMessage>, env: Env, quickLane: boolean): Promise<void> {
  const stub = queryStub(env, message.body.queryId);
  let claim;
  try {
    claim = await stub.claim();
  } catch (error) {
    logError(message.body.queryId, "claim", error);
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  }
  if (!claim.ok) {
    // A query cancelled while it ran, or between retries, holds its owner's slot until the engine lets it go.
    if (claim.record && FINISHED.has(claim.record.status)) await stub.release();
    message.ack();
    return;
  }
  try {
    // Who submitted what, and when, is the query's row's.
    const row = await findQuery(env.DB, message.body.queryId);
    const limits = quickLane ? { ...claim.record.limits, quickLaneMs: QUICK_LANE_MS } : claim.record.limits;
    const outcome = row ? await runClaimedQuery(env, row, limits, stub) : WITHDRAWN;
    const recorded = outcome.status === "cancelled" ? null : await stub.finish(outcome);
    // Cancelled or failed by the watchdog meanwhile: nothing points to the result, so nothing else would delete it.
    if (outcome.status === "succeeded" && recorded?.status !== "succeeded")
      await env.BUCKET.delete([outcome.resultKey, resultIndexKey(outcome.resultKey)]);
    if (outcome.status === "cancelled" || recorded?.status === "cancelled") await stub.release();
    message.ack();
  } catch (error) {
    if (error instanceof LongWork) {
      await moveToLongLane(message, stub, error);
      return;
    }
    logError(message.body.queryId, "run", error);
    try {
      await stub.requeue(
        `Queued again after a transient error: ${error instanceof Error ? error.message : "storage error"}`,
      );
    } catch (requeueError) {
      // The watchdog fails the query if it stays running; the retry is still worth trying.
      logError(message.body.queryId, "requeue", requeueError);
    }
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
  }
}

/** Puts a query back in the queue for the long lane (its object sends it there); if that fails, the quick lane tries it again. */
async function moveToLongLane(
  message: Message<QueryMessage>,
  stub: ReturnType<typeof queryStub>,
  why: LongWork,
): Promise<void> {
  try {
    const moved = await stub.toLongLane(
      `Queued: in the lane for long queries (${why.message}); it runs from the start there.`,
    );
    // Cancelled (or ended by the watchdog) while it ran: nothing moves, and the slot it held is let go.
    if (moved && FINISHED.has(moved.status)) await stub.release();
    message.ack();
  } catch (error) {
    logError(message.body.queryId, "move to the long lane", error);
    // Back in the queue, so the retry can claim it (if this fails too, the watchdog ends it).
    await stub.requeue(`Queued again after a transient error: ${String(error)}`).catch(() => undefined);
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
  }
}

/**
 * Builds a version's column images; a storage error retries the message with
 * backoff. A build that cannot succeed is logged and acknowledged: queries
 * on that version keep reading its CSV.
 */
async function consumePrepare(message: Message<PrepareMessage>, env: Env): Promise<void> {
  const started = Date.now();
  if (!(message.body.memoryBudgetBytes > 0)) {
    // Sent by an older version of the service, without the budget; the cron asks again with it.
    logPrepareError(message.body, "prepare request without a memory budget, dropped", null);
    message.ack();
    return;
  }
  try {
    const outcome = await prepareItem(env, message.body);
    console.log(JSON.stringify({ prepare: message.body.prepare, outcome, ms: Date.now() - started }));
    message.ack();
  } catch (error) {
    logPrepareError(message.body, "prepare", error);
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
  }
}

/**
 * The dead-letter queue's consumer: a query that could not be run after
 * every retry is failed, then acknowledged; a column-image build that kept
 * failing is dropped (its version stays readable from the CSV).
 */
export async function consumeDeadQueries(batch: MessageBatch<WorkMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    if (isPrepare(message.body)) {
      logPrepareError(message.body, "prepare given up after the last retry", null);
      message.ack();
      continue;
    }
    const body = message.body;
    try {
      await queryStub(env, body.queryId).finish({
        status: "failed",
        message: "Failed: the query could not be run after several attempts (storage errors); submit it again.",
      });
      message.ack();
    } catch (error) {
      logError(body.queryId, "dead-letter", error);
      message.retry({ delaySeconds: 30 });
    }
  }
}

function logError(queryId: string, step: string, error: unknown): void {
  console.error(
    JSON.stringify({ queryId, step, error: String(error), stack: error instanceof Error ? error.stack : undefined }),
  );
}

function logPrepareError(body: PrepareMessage, step: string, error: unknown): void {
  console.error(
    JSON.stringify({
      prepare: body.prepare,
      step,
      error: error === null ? undefined : String(error),
      stack: error instanceof Error ? error.stack : undefined,
    }),
  );
}
