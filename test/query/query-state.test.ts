import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { settings } from "../../src/worker/config";
import type { QueryRecord, RunOutcome } from "../../src/worker/query/query-record";
import type { QueryState } from "../../src/worker/query/query-state";
import { stateOf } from "../support/query";

const HOUR_MS = 3_600_000;

function newQuery(sql = "SELECT 1") {
  const queryId = crypto.randomUUID().replace(/-/g, "").slice(0, 22);
  const limits = { ...settings(env).query, timeLimitMs: HOUR_MS };
  return { queryId, stub: stateOf(queryId), init: { queryId, ownerUserId: "user-1", sql, limits } };
}

const SUCCESS: RunOutcome = {
  status: "succeeded",
  size: 12,
  rowCount: 2,
  bytesLoaded: 40,
  peakMemoryBytes: 1000,
  timings: { queueWaitMs: 1, loadMs: 2, executeMs: 3, writeMs: 4 },
  resultKey: "results/x.csv",
  resultColumns: [{ name: "a", type: "INTEGER" }],
  expiresAt: "2030-01-01T00:00:00Z",
};

describe("QueryState", () => {
  it("should record a new query as queued and return the first record when created again", async () => {
    const { stub, init } = newQuery();

    const first = await stub.create(init);
    const again = await stub.create({ ...init, sql: "SELECT 2", ownerUserId: "someone-else" });

    expect(first).toMatchObject({ status: "queued", sql: "SELECT 1", ownerUserId: "user-1", size: 0 });
    expect(again).toEqual(first);
    expect(await stub.get()).toEqual(first);
  });

  it("should answer null for a query that was never created", async () => {
    const { stub } = newQuery();

    expect(await stub.get()).toBeNull();
    expect((await stub.claim()).ok).toBe(false);
    expect(await stub.cancel()).toEqual({ ok: false, record: null });
  });

  it("should claim a queued query once, counting the attempt and arming the watchdog", async () => {
    const { stub, init } = newQuery();
    await stub.create(init);

    const claimed = await stub.claim();
    const second = await stub.claim();

    expect(claimed.ok).toBe(true);
    expect(claimed.record).toMatchObject({ status: "running" });
    expect(second).toEqual({ ok: false, record: claimed.record });
  });

  it.each(["succeeded", "failed", "cancelled"] as const)("should refuse to claim a %s query", async (end) => {
    const { stub, init } = newQuery();
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
    const { stub, init } = newQuery();
    await stub.create(init);
    await stub.claim();

    const requeued = await stub.requeue("R2 is down");
    const reclaimed = await stub.claim();

    expect(requeued).toMatchObject({ status: "queued" });
    expect(requeued?.message).toContain("R2 is down");
    expect(reclaimed.record).toMatchObject({ status: "running" });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
  });

  it("should not requeue a query that is not running", async () => {
    const { stub, init } = newQuery();
    const created = await stub.create(init);

    expect(await stub.requeue("R2 is down")).toEqual(created);
  });

  it("should record success with the result's facts and disarm the watchdog", async () => {
    const { stub, init } = newQuery();
    await stub.create(init);
    await stub.claim();

    const finished = await stub.finish(SUCCESS);

    expect(finished).toMatchObject({
      status: "succeeded",
      size: 12,
      rowCount: 2,
      resultKey: "results/x.csv",
      expiresAt: "2030-01-01T00:00:00Z",
    });
    expect(finished?.message).toMatch(/^Succeeded: 2 rows, 12 bytes/);
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });

  it("should keep a cancelled query cancelled when its run reports an outcome afterwards", async () => {
    const { stub, init } = newQuery();
    await stub.create(init);
    await stub.claim();
    const cancelled = await stub.cancel();

    const after = await stub.finish(SUCCESS);

    expect(cancelled.ok).toBe(true);
    expect(after).toEqual(cancelled.record);
    expect(after).toMatchObject({ status: "cancelled", resultKey: null, size: 0 });
  });

  it("should cancel a queued query and a running one, and refuse to cancel one that has ended", async () => {
    const queued = newQuery();
    await queued.stub.create(queued.init);
    const running = newQuery();
    await running.stub.create(running.init);
    await running.stub.claim();
    const ended = newQuery();
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
    const { stub, init } = newQuery();
    await stub.create(init);
    await stub.claim();

    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const record = await stub.get();

    expect(record).toMatchObject({ status: "failed" });
    expect(record?.message).toMatch(/time limit/);
  });

  it("should leave a query that ended alone when a stale watchdog fires", async () => {
    const { stub, init } = newQuery();
    await stub.create(init);
    await stub.claim();
    await stub.finish(SUCCESS);
    const before = await stub.get();

    await runInDurableObject(stub, (instance: QueryState) => instance.alarm());

    expect(await stub.get()).toEqual(before);
  });

  it("should forget an expired result but keep the query succeeded", async () => {
    const { stub, init } = newQuery();
    await stub.create(init);
    await stub.claim();
    await stub.finish(SUCCESS);

    const expired: QueryRecord | null = await stub.expireResult();

    expect(expired).toMatchObject({ status: "succeeded", resultKey: null, expiresAt: "2030-01-01T00:00:00Z" });
    expect(expired?.message).toMatch(/expired/);
  });

  it("should keep the failure facts a failed run reports", async () => {
    const { stub, init } = newQuery();
    await stub.create(init);
    await stub.claim();

    const failed = await stub.finish({
      status: "failed",
      message: "Failed: too big.",
      bytesLoaded: 99,
      peakMemoryBytes: 1234,
      timings: { loadMs: 5 },
    });

    expect(failed).toMatchObject({
      status: "failed",
      message: "Failed: too big.",
      bytesLoaded: 99,
      peakMemoryBytes: 1234,
      timings: { queueWaitMs: 0, loadMs: 5, executeMs: 0, writeMs: 0 },
      resultKey: null,
    });
  });

  it("should fail a query recorded without limits (queued before they were recorded) instead of running it", async () => {
    const { stub, init } = newQuery();
    const { limits: _limits, ...older } = init;
    await stub.create(init);
    await runInDurableObject(stub, async (_instance: QueryState, state) => {
      const record = (await state.storage.get<QueryRecord>("query"))!;
      delete record.limits;
      await state.storage.put("query", { ...record, ...older });
    });

    const claim = await stub.claim();

    expect(claim.ok).toBe(false);
    expect(claim.record).toMatchObject({
      status: "failed",
      message: "Failed: the query was queued before an upgrade of the service; submit it again.",
    });
  });
});
