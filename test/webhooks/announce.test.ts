import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { findQuery } from "../../src/worker/query/history";
import { login, userIdOf } from "../support/login";
import { stateOf } from "../support/query";
import { finishWhileD1Fails, newQueryState, SUCCEEDED_RUN as SUCCESS } from "../support/query-state";

const URL = "https://hooks.example.com/dqs";
const SENT = { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };

let ownerUserId: string;

beforeAll(async () => {
  ownerUserId = await userIdOf(await login("hook_announce"));
});

/** A query with a Callback (or without), its row written as a submit writes it. */
function newQuery(callback = true) {
  return newQueryState(ownerUserId, callback ? { callbackUrl: URL } : {});
}

// The queue the QueryState objects hand completion webhooks to; watched (and kept from delivering) here.
let send: MockInstance<Queue["send"]>;

beforeEach(() => {
  send = vi.spyOn(env.WEBHOOK_QUEUE, "send").mockResolvedValue(SENT);
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a query's end hands its completion webhook to the queue", () => {
  it("should send it once its D1 row has the end, and mark it handed over", async () => {
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();
    const endSeen: (string | undefined)[] = [];
    // The delivery reads the row: it must have the end by the time the message is sent.
    send.mockImplementation(async () => {
      endSeen.push((await findQuery(env.DB, queryId))?.end?.status);
      return SENT;
    });

    const finished = await stub.finish(SUCCESS);
    await stub.finish({ status: "failed", message: "Failed: late." });
    await stub.cancel();
    await stub.get();

    expect(send.mock.calls).toEqual([[{ queryId }]]);
    expect(endSeen).toEqual(["succeeded"]);
    expect(finished).toMatchObject({ published: true, callback: true, announced: true });
    expect(await stub.get()).toMatchObject({ announced: true });
  });

  it("should send it when the query fails, is cancelled while queued or running, or the watchdog fails it", async () => {
    const failed = await newQuery();
    await failed.stub.create(failed.init);
    await failed.stub.claim();
    await failed.stub.finish({ status: "failed", message: "Failed: no such table." });

    const cancelledQueued = await newQuery();
    await cancelledQueued.stub.create(cancelledQueued.init);
    await cancelledQueued.stub.cancel();

    const cancelledRunning = await newQuery();
    await cancelledRunning.stub.create(cancelledRunning.init);
    await cancelledRunning.stub.claim();
    await cancelledRunning.stub.cancel();

    const timedOut = await newQuery();
    await timedOut.stub.create(timedOut.init);
    await timedOut.stub.claim();
    expect(await runDurableObjectAlarm(timedOut.stub)).toBe(true);

    expect(send.mock.calls).toEqual([
      [{ queryId: failed.queryId }],
      [{ queryId: cancelledQueued.queryId }],
      [{ queryId: cancelledRunning.queryId }],
      [{ queryId: timedOut.queryId }],
    ]);
    expect((await findQuery(env.DB, timedOut.queryId))?.end?.status).toBe("failed");
  });

  it("should send nothing while the query runs, nor for a query without a Callback", async () => {
    const running = await newQuery();
    await running.stub.create(running.init);
    await running.stub.claim();
    await running.stub.progress("Running: step 2.");

    const without = await newQuery(false);
    await without.stub.create(without.init);
    await without.stub.claim();
    await without.stub.finish(SUCCESS);

    expect(send).not.toHaveBeenCalled();
    expect(await without.stub.get()).toMatchObject({ published: true, callback: false, announced: false });
  });

  it("should try again from the alarm when the queue refuses it, until it is handed over", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    send.mockRejectedValueOnce(new Error("queue unavailable")).mockRejectedValueOnce(new Error("still unavailable"));
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();

    const finished = await stub.finish(SUCCESS);
    expect(finished).toMatchObject({ published: true, announced: false });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.get()).toMatchObject({ announced: false });
    expect(await runDurableObjectAlarm(stub)).toBe(true);

    expect(await stub.get()).toMatchObject({ announced: true });
    expect(send.mock.calls).toEqual([[{ queryId }], [{ queryId }], [{ queryId }]]);
    // Handed over: no alarm is left to send it again.
    expect(await runDurableObjectAlarm(stub)).toBe(false);
    expect(send).toHaveBeenCalledTimes(3);
    expect((await findQuery(env.DB, queryId))?.end?.status).toBe("succeeded");
  });

  it("should hand the end over only after its D1 row has it, when that write had failed", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const { queryId, stub, init } = await newQuery();
    await stub.create(init);
    await stub.claim();

    const finished = await finishWhileD1Fails(stub, SUCCESS);

    expect(finished).toMatchObject({ published: false, announced: false });
    expect(send).not.toHaveBeenCalled();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.get()).toMatchObject({ published: true, announced: true });
    expect(send.mock.calls).toEqual([[{ queryId }]]);
  });
});
