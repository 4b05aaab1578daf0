import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import worker from "../../src/worker/engine";
import { userQueriesStub, type QueryMessage } from "../../src/worker/query/queries";
import type { RunOutcome } from "../../src/worker/query/query-record";
import type { QueryState } from "../../src/worker/query/query-state";
import { resultIndexKey, resultObjectKey } from "../../src/worker/storage/keys";
import { readEnvelope } from "../support/http";
import { login, userIdOf, type LoggedIn } from "../support/login";
import {
  bareName,
  cancelQuery,
  consume,
  eventually,
  outcomeOf,
  recordOf,
  resultText,
  seedDataset,
  serviceWith,
  stateFailing,
  stateOf,
  stateWith,
  statusOf,
  submitOk,
  TestQueue,
} from "../support/query";

let user: LoggedIn;
let numbers: string;
let errorLog: MockInstance<typeof console.error>;

beforeEach(() => {
  errorLog = vi.spyOn(console, "error").mockImplementation(() => undefined);
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** The steps the consumer logged as failed for a query. */
function loggedSteps(queryId: string): string[] {
  return errorLog.mock.calls
    .map(([line]) => JSON.parse(String(line)) as { queryId: string; step: string })
    .filter((entry) => entry.queryId === queryId)
    .map((entry) => entry.step);
}

beforeAll(async () => {
  user = await login("q_consumer");
  const dataset = bareName("cons");
  await seedDataset(user.accessToken, user.accountName, dataset, {
    nums: { columns: [["n", "INTEGER"]], csv: "n\n1\n2\n3\n" },
  });
  numbers = `${user.accountName}.${dataset}.nums`;
});

/** A query submitted through the API and left queued: nothing consumes it until the test does. */
async function queued(sql = `SELECT sum(n) AS total FROM ${numbers}`): Promise<string> {
  return submitOk(user.accessToken, sql, serviceWith(new TestQueue()));
}

/** A bucket whose reads fail, as R2 does when it is unavailable. */
function bucketFailingReads(): R2Bucket {
  return new Proxy(env.BUCKET, {
    get(target, property) {
      if (property === "get") return () => Promise.reject(new Error("R2 is unavailable"));
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("consumeQueries", () => {
  it("should run a queued query, store its result and acknowledge the message", async () => {
    const queryId = await queued();

    const result = await consume([queryId]);

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await statusOf(user.accessToken, queryId)).toMatchObject({ Status: "succeeded", RowCount: 1 });
    expect(await resultText(user.accessToken, queryId)).toBe("total\n6\n");
  });

  it("should acknowledge a redelivered message of a running query without touching it", async () => {
    const queryId = await queued();
    await stateOf(queryId).claim();
    const before = await recordOf(queryId);

    const result = await consume([queryId]);

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await recordOf(queryId)).toEqual(before);
    expect(await env.BUCKET.head(await resultObjectKey(queryId))).toBeNull();
  });

  it("should acknowledge a redelivered message of a succeeded query without running it again", async () => {
    const queryId = await queued();
    await consume([queryId]);
    const before = await recordOf(queryId);
    const stored = await env.BUCKET.head(await resultObjectKey(queryId));

    const result = await consume([queryId]);

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await recordOf(queryId)).toEqual(before);
    expect((await env.BUCKET.head(await resultObjectKey(queryId)))?.uploaded).toEqual(stored?.uploaded);
  });

  it("should acknowledge a redelivered message of a failed query and keep its failure", async () => {
    const queryId = await queued(`SELECT * FROM ${user.accountName}.nothing_here.nums`);
    await consume([queryId]);
    const before = await recordOf(queryId);

    const result = await consume([queryId]);

    expect(before?.status).toBe("failed");
    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await recordOf(queryId)).toEqual(before);
  });

  it("should acknowledge the message of a query cancelled while queued, and never run it", async () => {
    const queryId = await queued();
    await readEnvelope(await cancelQuery(user.accessToken, queryId), 200);
    const before = await recordOf(queryId);

    const result = await consume([queryId]);

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await recordOf(queryId)).toEqual(before);
    expect(before).toMatchObject({ status: "cancelled" });
    expect(await env.BUCKET.head(await resultObjectKey(queryId))).toBeNull();
  });

  it("should stop a running query that never ends once it is cancelled, and acknowledge it", async () => {
    const queryId = await queued("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c");
    const running = consume([queryId]);
    await eventually(
      () => recordOf(queryId),
      (record) => record?.message === "Running: executing the query.",
    );

    const cancelled = await stateOf(queryId).cancel();
    // The statement never ends by itself (within the test's 30 s, or the 120 s time limit): only the cancel stops it.
    const result = await running;

    expect(cancelled).toMatchObject({ ok: true, record: { status: "cancelled" } });
    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await statusOf(user.accessToken, queryId)).toMatchObject({ Status: "cancelled", Size: 0, RowCount: null });
    expect(await env.BUCKET.head(await resultObjectKey(queryId))).toBeNull();
  }, 30_000);

  it("should delete the result of a run whose query was cancelled just before its success was recorded", async () => {
    const queryId = await queued();
    const cancelFirst = stateWith("finish", (stub) => async (outcome: RunOutcome) => {
      await stub.cancel();
      return stub.finish(outcome);
    });

    const result = await consume([queryId], { QUERY_STATE: cancelFirst });

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await recordOf(queryId)).toMatchObject({ status: "cancelled", resultKey: null });
    const key = await resultObjectKey(queryId);
    expect(await env.BUCKET.head(key)).toBeNull();
    expect(await env.BUCKET.head(resultIndexKey(key))).toBeNull();
  });

  it("should put the query back in the queue and retry with a delay when R2 cannot be read, then succeed", async () => {
    const queryId = await queued();

    const failed = await consume([queryId], { BUCKET: bucketFailingReads() });
    const between = await statusOf(user.accessToken, queryId);
    const later = await consume([queryId], {}, { attempts: 2 });

    expect(outcomeOf(failed)).toEqual({ acked: 0, retried: [5] });
    expect(loggedSteps(queryId)).toEqual(["run"]);
    expect(between.Status).toBe("queued");
    expect(between.Message).toMatch(/transient error.*R2 is unavailable/);
    expect(outcomeOf(later)).toEqual({ acked: 1, retried: [] });
    expect(await recordOf(queryId)).toMatchObject({ status: "succeeded" });
    expect(await resultText(user.accessToken, queryId)).toBe("total\n6\n");
  });

  it("should wait longer before each further retry", async () => {
    const queryId = await queued();

    const retries = [];
    for (const attempts of [1, 2, 3, 9])
      retries.push(...outcomeOf(await consume([queryId], { BUCKET: bucketFailingReads() }, { attempts })).retried);

    expect(retries).toEqual([5, 20, 80, 300]);
  });

  it("should retry, not acknowledge, when the outcome of a run cannot be recorded", async () => {
    const succeeding = await queued();
    const failing = await queued(`SELECT * FROM ${user.accountName}.nothing_here.nums`);

    const result = await consume([succeeding, failing], { QUERY_STATE: stateFailing("finish") });

    expect(outcomeOf(result)).toEqual({ acked: 0, retried: [5, 5] });
    expect((await recordOf(succeeding))?.status).toBe("queued");
    expect((await recordOf(failing))?.status).toBe("queued");
  });

  it("should retry when the query's state cannot be reached to claim it", async () => {
    const queryId = await queued();

    const result = await consume([queryId], { QUERY_STATE: stateFailing("claim") });

    expect(outcomeOf(result)).toEqual({ acked: 0, retried: [5] });
    expect(loggedSteps(queryId)).toEqual(["claim"]);
    expect((await recordOf(queryId))?.status).toBe("queued");
  });

  it("should fail, without running it, a query whose row was taken back (its submit failed)", async () => {
    const queryId = await queued();
    await env.DB.prepare("DELETE FROM queries WHERE id = ?").bind(queryId).run();

    const result = await consume([queryId]);

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await stateOf(queryId).get()).toMatchObject({
      status: "failed",
      message: "Failed: the submit of this query failed and was taken back; submit it again.",
    });
    expect(await env.BUCKET.head(await resultObjectKey(queryId))).toBeNull();
  });
});

describe("the quick lane", () => {
  // About 3 × 10^7 steps or more: past the quick lane's half second of work, well within the time limit.
  const LONG_SQL =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 4000000) SELECT count(*) AS n FROM c";

  /** Query state whose move to the long lane is recorded and only puts the query back in the queue (nothing sent). */
  function recordingMoves(): { moves: string[]; state: DurableObjectNamespace<QueryState> } {
    const moves: string[] = [];
    const state = stateWith("toLongLane", (real) => async (message: string) => {
      moves.push(message);
      return real.requeue(message);
    });
    return { moves, state };
  }

  it("should run a short query there, moving nothing", async () => {
    const { moves, state } = recordingMoves();
    const queryId = await queued();

    const result = await consume([queryId], { QUERY_STATE: state }, { quickLane: true });

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(moves).toEqual([]);
    expect(await resultText(user.accessToken, queryId)).toBe("total\n6\n");
  });

  it("should hand a query past its share to its object for the long lane, leaving no result, and run it there afresh", async () => {
    const { moves, state } = recordingMoves();
    const queryId = await queued(LONG_SQL);

    const quick = await consume([queryId], { QUERY_STATE: state }, { quickLane: true });
    const between = await statusOf(user.accessToken, queryId);
    const resultBetween = await env.BUCKET.head(await resultObjectKey(queryId));
    const long = await consume([queryId]);

    expect(outcomeOf(quick)).toEqual({ acked: 1, retried: [] });
    expect(moves).toEqual([
      "Queued: in the lane for long queries (the query needs more than 500 ms of work); it runs from the start there.",
    ]);
    expect(between.Status).toBe("queued");
    expect(resultBetween).toBeNull();
    expect(outcomeOf(long)).toEqual({ acked: 1, retried: [] });
    expect(await statusOf(user.accessToken, queryId)).toMatchObject({ Status: "succeeded", RowCount: 1 });
    expect(await resultText(user.accessToken, queryId)).toBe("n\n4000000\n");
  });

  it("should let the slot go of a query cancelled just as it would move, and move nothing", async () => {
    const queryId = await queued(LONG_SQL);
    // The owner cancels while the run is past its share: the move finds the query cancelled.
    const cancelledFirst = stateWith("toLongLane", (real) => async (message: string) => {
      await real.cancel();
      return real.toLongLane(message);
    });
    const owner = userQueriesStub(env, await userIdOf(user));
    const slotHeld = () =>
      runInDurableObject(owner, async (_instance, state) =>
        ((await state.storage.get<{ admitted: { queryId: string }[] }>("slots"))?.admitted ?? []).some(
          (slot) => slot.queryId === queryId,
        ),
      );
    const heldBefore = await slotHeld();

    const result = await consume([queryId], { QUERY_STATE: cancelledFirst }, { quickLane: true });

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(heldBefore).toBe(true);
    expect(await slotHeld()).toBe(false);
    expect(await recordOf(queryId)).toMatchObject({ status: "cancelled" });
  });

  it("should retry in the quick lane when the query's object cannot take the move", async () => {
    const queryId = await queued(LONG_SQL);

    const result = await consume([queryId], { QUERY_STATE: stateFailing("toLongLane") }, { quickLane: true });

    expect(outcomeOf(result)).toEqual({ acked: 0, retried: [5] });
    expect(loggedSteps(queryId)).toEqual(["move to the long lane"]);
    expect((await recordOf(queryId))?.status).toBe("queued");
  });

  it("should have the long lane's queue bring the query to an end once its object sends it there", async () => {
    const queryId = await queued(LONG_SQL);

    await consume([queryId], {}, { quickLane: true });
    // The object's alarm sends it to the local long-lane queue, whose consumer (the tests' Worker) runs it.
    const ended = await eventually(
      () => statusOf(user.accessToken, queryId),
      (status) => status.Status === "succeeded" || status.Status === "failed",
      20_000,
    );

    expect(ended).toMatchObject({ Status: "succeeded", RowCount: 1 });
    expect(await resultText(user.accessToken, queryId)).toBe("n\n4000000\n");
  });
});

describe("consumeDeadQueries", () => {
  it("should fail a query that ran out of retries and acknowledge the message", async () => {
    const queryId = await queued();
    await consume([queryId], { BUCKET: bucketFailingReads() });

    const result = await consume([queryId], {}, { dead: true });

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    const status = await statusOf(user.accessToken, queryId);
    expect(status.Status).toBe("failed");
    expect(status.Message).toMatch(/could not be run after several attempts/);
  });

  it("should leave a query that has already ended as it is", async () => {
    const queryId = await queued();
    await consume([queryId]);
    const before = await recordOf(queryId);

    const result = await consume([queryId], {}, { dead: true });

    expect(outcomeOf(result)).toEqual({ acked: 1, retried: [] });
    expect(await recordOf(queryId)).toEqual(before);
  });

  it("should retry when the failure cannot be recorded", async () => {
    const queryId = await queued();

    const result = await consume([queryId], { QUERY_STATE: stateFailing("finish") }, { dead: true });

    expect(outcomeOf(result)).toEqual({ acked: 0, retried: [30] });
    expect(loggedSteps(queryId)).toEqual(["dead-letter"]);
    expect((await recordOf(queryId))?.status).toBe("queued");
  });
});

describe("the Worker's queue handler", () => {
  it("should send messages of the dead-letter queue to the dead-letter consumer", async () => {
    const queryId = await queued();
    const batch = createMessageBatch<QueryMessage>("dqs-queries-dlq", [
      { id: "dead-1", timestamp: new Date(), attempts: 4, body: { queryId } },
    ]);
    const ctx = createExecutionContext();

    await worker.queue(batch, env);

    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["dead-1"]);
    expect((await recordOf(queryId))?.message).toMatch(/could not be run after several attempts/);
  });

  it("should run the long lane's messages without sending them on", async () => {
    const longLane = new TestQueue();
    const queryId = await queued(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 4000000) SELECT count(*) AS n FROM c",
    );
    const batch = createMessageBatch<QueryMessage>("dqs-queries-long", [
      { id: "long-1", timestamp: new Date(), attempts: 1, body: { queryId } },
    ]);
    const ctx = createExecutionContext();

    await worker.queue(batch, { ...env, LONG_QUERY_QUEUE: longLane });

    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["long-1"]);
    expect(longLane.sent).toEqual([]);
    expect((await recordOf(queryId))?.status).toBe("succeeded");
  });

  it("should send messages of the query queue to the query consumer", async () => {
    const queryId = await queued();
    const batch = createMessageBatch<QueryMessage>("dqs-queries", [
      { id: "live-1", timestamp: new Date(), attempts: 1, body: { queryId } },
    ]);
    const ctx = createExecutionContext();

    await worker.queue(batch, env);

    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["live-1"]);
    expect((await recordOf(queryId))?.status).toBe("succeeded");
  });
});

describe("the engine Worker's queue handler", () => {
  it("should answer HTTP with a 404 that points to the API Worker", async () => {
    const response = await worker.fetch();

    expect(response.status).toBe(404);
    expect(await response.text()).toMatch(/no HTTP interface; the API is the dqs Worker/);
  });

  it("should refuse a batch from a queue it does not consume, naming it", async () => {
    const batch = createMessageBatch<QueryMessage>("dqs-queries-typo", []);

    expect(() => worker.queue(batch, env)).toThrow("the engine does not consume the queue dqs-queries-typo");
  });
});
