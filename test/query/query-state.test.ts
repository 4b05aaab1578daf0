import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { findQuery } from "../../src/worker/query/history";
import type { QueryEnd, RunOutcome } from "../../src/worker/query/query-record";
import type { LiveQuery, QueryState } from "../../src/worker/query/query-state";
import { login, userIdOf } from "../support/login";
import { recordOf, stateOf } from "../support/query";
import { finishWhileD1Fails, newQueryState, SUCCEEDED_RUN } from "../support/query-state";

let ownerUserId: string;

beforeAll(async () => {
  ownerUserId = await userIdOf(await login("q_state"));
});

/** A query's row, as a submit writes it, and the stub of its Durable Object (not created yet). */
function newQuery(sql = "SELECT 1") {
  return newQueryState(ownerUserId, { sql });
}

/** How the query's row says it ended; null while it has not. */
async function endOf(queryId: string): Promise<QueryEnd | null> {
  return (await findQuery(env.DB, queryId))?.end ?? null;
}

const SUCCESS: RunOutcome = { ...SUCCEEDED_RUN, reuseKey: "key-of-x" };

describe("QueryState", () => {
  it("should record a new query as queued and return the first state when created again", async () => {
    const { queryId, stub, init } = await newQuery();

    const first = await stub.create(init);
    const again = await stub.create({ ...init, ownerUserId: "someone-else" });

    expect(first).toMatchObject({ outcome: "created", record: { status: "queued", ownerUserId, figures: null } });
    expect(again).toEqual({ outcome: "exists", record: first.record });
    expect(await stub.get()).toEqual(first.record);
    expect(await endOf(queryId)).toBeNull();
  });

  describe("held by the submit that created it (an Idempotency-Key's attempt)", () => {
    /** Makes the attempt's hold on the state look as old as `ageMs`, as if its request had died. */
    async function ageHold(stub: DurableObjectStub<QueryState>, ageMs: number): Promise<void> {
      await runInDurableObject(stub, async (_instance, state) => {
        const record = (await state.storage.get<LiveQuery>("query"))!;
        await state.storage.put("query", {
          ...record,
          submitting: { ...record.submitting!, since: Date.now() - ageMs },
        });
      });
    }

    it("should tell another attempt it is busy until the first accepts, then give it the same state", async () => {
      const { stub, init } = await newQuery();

      await stub.create({ ...init, attempt: "first" });
      const meanwhile = await stub.create({ ...init, attempt: "second" });
      await stub.accept("first");
      const after = await stub.create({ ...init, attempt: "second" });

      expect(meanwhile.outcome).toBe("busy");
      expect(after).toMatchObject({ outcome: "exists", record: { status: "queued", submitting: null } });
    });

    it("should be discarded only by the attempt that holds it", async () => {
      const { stub, init } = await newQuery();
      await stub.create({ ...init, attempt: "first" });

      const byOther = await stub.discard("second");
      const kept = await stub.get();
      const byHolder = await stub.discard("first");

      expect(byOther).toBe(false);
      expect(kept).toMatchObject({ status: "queued" });
      expect(byHolder).toBe(true);
      expect(await stub.get()).toBeNull();
    });

    it("should be taken over by another attempt once the first has held it for a minute, and then kept from the first", async () => {
      const { stub, init } = await newQuery();
      await stub.create({ ...init, attempt: "first" });
      await ageHold(stub, 59_000);
      const early = await stub.create({ ...init, attempt: "second" });
      await ageHold(stub, 61_000);

      const late = await stub.create({ ...init, attempt: "second" });
      const discardedByFirst = await stub.discard("first");

      expect(early.outcome).toBe("busy");
      expect(late).toMatchObject({ outcome: "created", record: { submitting: { attempt: "second" } } });
      expect(discardedByFirst).toBe(false);
      expect(await stub.get()).toMatchObject({ status: "queued" });
    });

    it("should never be taken over once it has left the queue", async () => {
      const { stub, init } = await newQuery();
      await stub.create({ ...init, attempt: "first" });
      await stub.claim();
      await ageHold(stub, 61_000);

      const again = await stub.create({ ...init, attempt: "second" });

      expect(again).toMatchObject({ outcome: "exists", record: { status: "running" } });
    });
  });

  it("should answer null for a query that was never created", async () => {
    const { stub } = await newQuery();

    expect(await stub.get()).toBeNull();
    expect((await stub.claim()).ok).toBe(false);
    expect(await stub.cancel()).toEqual({ ok: false, record: null });
  });

  it("should claim a queued query once, counting the attempt and arming the watchdog", async () => {
    const { stub, init } = await newQuery();
    await stub.create(init);

    const claimed = await stub.claim();
    const second = await stub.claim();

    expect(claimed.ok).toBe(true);
    expect(claimed.record).toMatchObject({ status: "running" });
    expect(second).toEqual({ ok: false, record: claimed.record });
  });

  it.each(["succeeded", "failed", "cancelled"] as const)("should refuse to claim a %s query", async (end) => {
    const { stub, init } = await newQuery();
    await stub.create(init);
    if (end === "cancelled") await stub.cancel();
    else {
      await stub.claim();
      await stub.finish(end === "succeeded" ? SUCCESS : { status: "failed", message: "Failed: boom." });
    }
    const before = await stub.get();

    const claim = await stub.claim();

    expect(claim).toEqual({ ok: false, record: before });
    expect(before?.status).toBe(end);
  });

  it("should put a running query back in the queue after a transient error, for the next claim", async () => {
    const { stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();

    const requeued = await stub.requeue("Queued again after a transient error: R2 is down");
    const reclaimed = await stub.claim();

    expect(requeued).toMatchObject({ status: "queued" });
    expect(requeued?.message).toContain("R2 is down");
    expect(reclaimed.record).toMatchObject({ status: "running" });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
  });

  describe("moved to the engine's long lane", () => {
    /** Runs the object's alarm with `queue` as its long lane. */
    function alarmWith(stub: DurableObjectStub<QueryState>, queue: Pick<Queue, "send">): Promise<void> {
      return runInDurableObject(stub, async (instance: QueryState) => {
        const real = Reflect.get(instance, "env") as Env;
        Reflect.set(instance, "env", { ...real, LONG_QUERY_QUEUE: queue });
        try {
          await instance.alarm();
        } finally {
          Reflect.set(instance, "env", real);
        }
      });
    }

    it("should queue it saying why and send it from its alarm, once, for the long lane's claim", async () => {
      const { queryId, stub, init } = await newQuery();
      await stub.create(init);
      await stub.claim();
      const sent: unknown[] = [];
      const queue = { send: async (body: unknown) => void sent.push(body) } as unknown as Pick<Queue, "send">;

      const moved = await stub.toLongLane("Queued: in the lane for long queries (…); it runs from the start there.");
      const alarmAt = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
      await alarmWith(stub, queue);
      await alarmWith(stub, queue);
      const claimed = await stub.claim();

      expect(moved).toMatchObject({
        status: "queued",
        message: expect.stringMatching(/^Queued: in the lane for long/),
      });
      expect(alarmAt).toBeLessThanOrEqual(Date.now());
      // The second alarm is the queued check: it does not send the query again.
      expect(sent).toEqual([{ queryId }]);
      expect(claimed.record).toMatchObject({ status: "running", toLongLane: false });
    });

    it("should try the send again a few seconds later when the long lane cannot be reached", async () => {
      const { stub, init } = await newQuery();
      await stub.create(init);
      await stub.claim();
      await stub.toLongLane("Queued: in the lane for long queries.");
      const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);

      await alarmWith(stub, { send: () => Promise.reject(new Error("queue unreachable")) } as Pick<Queue, "send">);
      const alarmAt = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());

      expect(errors).toHaveBeenCalledWith(expect.stringContaining("send to the long lane"));
      expect(await stub.get()).toMatchObject({ status: "queued", toLongLane: true });
      expect(alarmAt).toBeGreaterThan(Date.now() + 1_000);
      expect(alarmAt).toBeLessThan(Date.now() + 60_000);
      errors.mockRestore();
    });

    it("should not move a query that is not running", async () => {
      const { stub, init } = await newQuery();
      const created = await stub.create(init);

      expect(await stub.toLongLane("Queued: in the lane for long queries.")).toEqual(created.record);
    });
  });

  it("should not requeue a query that is not running", async () => {
    const { stub, init } = await newQuery();
    const created = await stub.create(init);

    expect(await stub.requeue("Queued again after a transient error: R2 is down")).toEqual(created.record);
  });

  it("should write success with the result's facts into the query's row, once, and disarm the watchdog", async () => {
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();

    const finished = await stub.finish(SUCCESS);
    const end = await endOf(queryId);
    await stub.finish({ status: "failed", message: "Failed: a late report." });

    expect(finished).toMatchObject({ status: "succeeded", published: true, figures: null });
    expect(end).toMatchObject({
      status: "succeeded",
      size: 12,
      rowCount: 2,
      timings: SUCCESS.timings,
      resultKey: "results/x.csv",
      resultColumns: [{ name: "a", type: "INTEGER" }],
      expiresAt: "2030-01-01T00:00:00Z",
    });
    expect(end?.message).toMatch(/^Succeeded: 2 rows, 12 bytes/);
    expect(await endOf(queryId)).toEqual(end);
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });

  it("should keep an end D1 could not take, answer with it, and write it when its alarm fires", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();

    const kept = await finishWhileD1Fails(stub, SUCCESS);
    const endBefore = await endOf(queryId);
    const alarmed = await runDurableObjectAlarm(stub);

    expect(kept).toMatchObject({ status: "succeeded", published: false, figures: { size: 12, rowCount: 2 } });
    expect(String(errors.mock.calls[0]?.[0])).toContain("D1 is unavailable");
    expect(endBefore).toBeNull();
    expect(alarmed).toBe(true);
    expect(await endOf(queryId)).toMatchObject({ status: "succeeded", size: 12, rowCount: 2 });
    expect(await stub.get()).toMatchObject({ published: true, figures: null });
    errors.mockRestore();
  });

  it("should keep a cancelled query cancelled when its run reports an outcome afterwards", async () => {
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();
    const cancelled = await stub.cancel();

    const after = await stub.finish(SUCCESS);

    expect(cancelled.ok).toBe(true);
    expect(after).toEqual(cancelled.record);
    expect(await endOf(queryId)).toMatchObject({ status: "cancelled", resultKey: null, size: 0 });
  });

  it("should cancel a queued query and a running one, and refuse to cancel one that has ended", async () => {
    const queued = await newQuery();
    await queued.stub.create(queued.init);
    const running = await newQuery();
    await running.stub.create(running.init);
    await running.stub.claim();
    const ended = await newQuery();
    await ended.stub.create(ended.init);
    await ended.stub.claim();
    const failed = await ended.stub.finish({ status: "failed", message: "Failed: boom." });

    const results = [await queued.stub.cancel(), await running.stub.cancel(), await ended.stub.cancel()];

    expect(results.map((result) => [result.ok, result.record?.status])).toEqual([
      [true, "cancelled"],
      [true, "cancelled"],
      [false, "failed"],
    ]);
    expect(results[2]!.record).toEqual(failed);
    expect(await runDurableObjectAlarm(running.stub)).toBe(false);
  });

  it("should fail a query still running when the watchdog fires, saying it ran out of time", async () => {
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();

    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const record = await stub.get();

    expect(record).toMatchObject({ status: "failed" });
    expect(record?.message).toMatch(/time limit/);
    expect((await endOf(queryId))?.message).toMatch(/time limit/);
  });

  it("should leave a query that ended alone when a stale watchdog fires", async () => {
    const { stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();
    await stub.finish(SUCCESS);
    const before = await stub.get();

    await runInDurableObject(stub, (instance: QueryState) => instance.alarm());

    expect(await stub.get()).toEqual(before);
  });

  it("should keep the failure facts a failed run reports", async () => {
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();

    await stub.finish({
      status: "failed",
      message: "Failed: too big.",
      bytesLoaded: 99,
      peakMemoryBytes: 1234,
      timings: { loadMs: 5 },
    });

    expect(await endOf(queryId)).toMatchObject({
      status: "failed",
      message: "Failed: too big.",
      bytesLoaded: 99,
      peakMemoryBytes: 1234,
      timings: { queueWaitMs: 0, loadMs: 5, executeMs: 0, writeMs: 0 },
      resultKey: null,
    });
  });

  it("should fail a query recorded without limits (queued before they were recorded) instead of running it", async () => {
    const { stub, init } = await newQuery();
    await stub.create(init);
    await runInDurableObject(stub, async (_instance: QueryState, state) => {
      const record = (await state.storage.get<LiveQuery>("query"))!;
      delete record.limits;
      await state.storage.put("query", record);
    });

    const claim = await stub.claim();

    expect(claim.ok).toBe(false);
    expect(claim.record).toMatchObject({
      status: "failed",
      message: "Failed: the query was queued before an upgrade of the service; submit it again.",
    });
  });

  it("should read a query recorded before its row kept its end, and write that end into the row", async () => {
    const { queryId, stub, init } = await newQuery("SELECT 'older'");
    // The record as the service wrote it before migration 0007: the whole query, figures included.
    const older = {
      ...SUCCESS,
      queryId,
      ownerUserId,
      sql: "SELECT 'older'",
      limits: init.limits,
      message: "Succeeded: 2 rows, 12 bytes.",
      createdAt: "2026-11-20T07:00:00Z",
      updatedAt: "2026-11-20T07:00:01Z",
      createdAtMs: Date.parse("2026-11-20T07:00:00Z"),
    };
    await runInDurableObject(stub, (_instance: QueryState, state) => state.storage.put("query", older));

    const record = await recordOf(queryId);

    expect(record).toMatchObject({
      status: "succeeded",
      sql: "SELECT 'older'",
      message: "Succeeded: 2 rows, 12 bytes.",
      updatedAt: "2026-11-20T07:00:01Z",
      size: 12,
      rowCount: 2,
      resultKey: "results/x.csv",
    });
    expect(await endOf(queryId)).toMatchObject({ status: "succeeded", size: 12, resultKey: "results/x.csv" });
    expect(await stub.get()).toMatchObject({ status: "succeeded", published: true, figures: null });
  });
});
