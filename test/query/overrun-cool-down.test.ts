import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import type { FairShare } from "../../src/worker/config";
import { userQueriesStub } from "../../src/worker/query/queries";
import { limitStops, OVERRUN_OPENINGS, overranTimeLimit } from "../../src/worker/query/run-limits";
import { call, readEnvelope, type Fetch } from "../support/http";
import { authHeader, login, userIdOf, type LoggedIn } from "../support/login";
import {
  cancelQuery,
  consume,
  eventually,
  serviceWith,
  stateOf,
  submitOk,
  TestQueue,
  type QueryStatusData,
} from "../support/query";

const SHARE = { QUERY_MAX_RUNNING_PER_USER: "2", QUERY_MAX_QUEUED_PER_USER: "3" };
const TIME_LIMIT_FAILURE = limitStops.time({ timeLimitMs: 120_000 }).message;
const COOL_DOWN_MESSAGE =
  /^Queued: your recent queries ran past the time limit, so your next ones wait until (\d\d:\d\d:\d\d) UTC \((\d+) s\) behind other users' queries \(QUERY_OVERRUN_COOLDOWN_SECONDS\)\.$/;

interface StoredSlots {
  admitted: { queryId: string; at: number }[];
  waiting: string[];
  coolDown?: { until: number; ms: number } | null;
}

let counter = 0;
let user: LoggedIn;
let queue: TestQueue;

beforeEach(async () => {
  user = await login(`cool_${++counter}`);
  queue = new TestQueue();
});

/** The service with the fair-share limits of these tests and a cool-down of `seconds`. */
function serviceCooling(seconds: number): Fetch {
  return serviceWith(queue, { ...SHARE, QUERY_OVERRUN_COOLDOWN_SECONDS: String(seconds) });
}

async function slotsOf(who: LoggedIn): Promise<StoredSlots> {
  return runInDurableObject(userQueriesStub(env, await userIdOf(who)), async (_instance, state) => {
    const slots = await state.storage.get<StoredSlots>("slots");
    return { admitted: slots?.admitted ?? [], waiting: slots?.waiting ?? [], coolDown: slots?.coolDown ?? null };
  });
}

async function statusVia(service: Fetch, token: string, queryId: string): Promise<QueryStatusData> {
  const response = await call(`/v1/query/${queryId}/status`, { headers: authHeader(token) }, service);
  return (await readEnvelope<QueryStatusData>(response, 200)).Data;
}

/** Submits a query and has it end failed with `message`, as the engine reports a run that stopped. */
async function failWith(service: Fetch, message: string): Promise<string> {
  const queryId = await submitOk(user.accessToken, "SELECT 'runaway'", service);
  expect((await stateOf(queryId).claim()).ok).toBe(true);
  await stateOf(queryId).finish({ status: "failed", message });
  return queryId;
}

describe("cool-down after an overrun of the time limit", () => {
  it("should start a cool-down when a query fails for the time limit, and hold the user's next query saying until when", async () => {
    const service = serviceCooling(60);
    const before = Date.now();
    await failWith(service, TIME_LIMIT_FAILURE);

    const next = await submitOk(user.accessToken, "SELECT 'next'", service);

    const slots = await slotsOf(user);
    expect(slots.coolDown?.ms).toBe(60_000);
    expect(slots.coolDown!.until).toBeGreaterThanOrEqual(before + 60_000);
    expect(slots.admitted).toEqual([]);
    expect(slots.waiting).toEqual([next]);
    expect(queue.sent).not.toContainEqual({ queryId: next });
    const status = await statusVia(service, user.accessToken, next);
    expect(status.Status).toBe("queued");
    const [, clock, seconds] = COOL_DOWN_MESSAGE.exec(status.Message) ?? [];
    expect(clock).toBe(new Date(slots.coolDown!.until).toISOString().slice(11, 19));
    expect(Number(seconds)).toBeGreaterThan(50);
    expect(Number(seconds)).toBeLessThanOrEqual(60);
  });

  it("should start a cool-down when a query is stopped by the engine for the time limit", async () => {
    const overrides = { ...SHARE, QUERY_OVERRUN_COOLDOWN_SECONDS: "60", QUERY_TIME_LIMIT_SECONDS: "1" };
    const runaway = await submitOk(
      user.accessToken,
      "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
      serviceWith(queue, overrides),
    );

    await consume([runaway], overrides);

    const ended = await statusVia(serviceWith(queue, overrides), user.accessToken, runaway);
    expect(ended.Status).toBe("failed");
    expect(ended.Message.startsWith(OVERRUN_OPENINGS.ran)).toBe(true);
    expect((await slotsOf(user)).coolDown?.ms).toBe(60_000);
  });

  it("should start a cool-down when the watchdog fails a query still running past the time limit", async () => {
    const service = serviceCooling(60);
    const stuck = await submitOk(user.accessToken, "SELECT 'stuck'", service);
    await stateOf(stuck).claim();

    expect(await runDurableObjectAlarm(stateOf(stuck))).toBe(true);

    expect((await statusVia(service, user.accessToken, stuck)).Message).toBe(limitStops.watchdog().message);
    expect((await slotsOf(user)).coolDown?.ms).toBe(60_000);
  });

  it("should admit a waiting query when the cool-down ends, with nothing else happening", async () => {
    const service = serviceCooling(1);
    await failWith(service, TIME_LIMIT_FAILURE);
    const next = await submitOk(user.accessToken, "SELECT 'after the cool-down' AS n", service);
    expect((await slotsOf(user)).waiting).toEqual([next]);

    // The object's own alarm admits it, to the real local queue, whose consumer runs it.
    const status = await eventually(
      () => statusVia(service, user.accessToken, next),
      (status) => status.Status === "succeeded",
    );

    expect(status.Status).toBe("succeeded");
    expect((await slotsOf(user)).waiting).toEqual([]);
  });

  it("should let a query waiting out a cool-down be cancelled", async () => {
    const service = serviceCooling(60);
    await failWith(service, TIME_LIMIT_FAILURE);
    const next = await submitOk(user.accessToken, "SELECT 'never mind'", service);

    await readEnvelope(await cancelQuery(user.accessToken, next), 200);

    expect((await slotsOf(user)).waiting).toEqual([]);
    expect((await statusVia(service, user.accessToken, next)).Status).toBe("cancelled");
  });

  it("should leave another user's queries unaffected", async () => {
    const service = serviceCooling(60);
    await failWith(service, TIME_LIMIT_FAILURE);
    const other = await login(`cool_other_${counter}`);

    const theirs = await submitOk(other.accessToken, "SELECT 'mine'", service);

    expect(queue.sent).toContainEqual({ queryId: theirs });
    expect(await slotsOf(other)).toMatchObject({ waiting: [], coolDown: null });
    expect((await statusVia(service, other.accessToken, theirs)).Message).toBe(
      "Queued; waiting for a worker to run it.",
    );
  });

  it("should start no cool-down for a query that fails otherwise (a syntax error)", async () => {
    const service = serviceCooling(60);
    const broken = await submitOk(user.accessToken, "SELECT 1 +", service);
    await consume([broken]);
    expect((await statusVia(service, user.accessToken, broken)).Status).toBe("failed");

    const next = await submitOk(user.accessToken, "SELECT 'next'", service);

    expect((await slotsOf(user)).coolDown).toBeNull();
    expect(queue.sent).toContainEqual({ queryId: next });
  });

  it("should double the cool-down with each further overrun up to 16 times, and start afresh after a clean lease", async () => {
    const slots = userQueriesStub(env, `cool_direct_${counter}`);
    const share: FairShare = { maxRunning: 4, maxWaiting: 10, leaseMs: 600_000, overrunCoolDownMs: 1_000 };
    const lengths: number[] = [];
    for (let overrun = 0; overrun < 6; overrun++) {
      await slots.enter(`q${overrun}`, share);
      await slots.leave(`q${overrun}`, { overran: true });
      lengths.push((await slotsOfStub(slots)).coolDown!.ms);
    }
    await runInDurableObject(slots, async (_instance, state) => {
      const stored = (await state.storage.get<StoredSlots>("slots"))!;
      stored.coolDown!.until = Date.now() - share.leaseMs - 1;
      await state.storage.put("slots", stored);
    });
    await slots.leave("q0", { overran: true });

    expect(lengths).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 16_000]);
    expect((await slotsOfStub(slots)).coolDown!.ms).toBe(1_000);
  });

  it("should tell every time-limit end from other failures by its message", () => {
    expect(overranTimeLimit(limitStops.time({ timeLimitMs: 5_000 }, " while loading").message)).toBe(true);
    expect(overranTimeLimit(limitStops.watchdog().message)).toBe(true);
    expect(overranTimeLimit(`${OVERRUN_OPENINGS.estimated} 400 s, past the time limit.`)).toBe(true);
    expect(overranTimeLimit(limitStops.load({ maxLoadBytes: 10 }).message)).toBe(false);
    expect(overranTimeLimit('Failed: near "+": syntax error')).toBe(false);
  });
});

async function slotsOfStub(stub: ReturnType<typeof userQueriesStub>): Promise<StoredSlots> {
  return runInDurableObject(stub, async (_instance, state) => (await state.storage.get<StoredSlots>("slots"))!);
}
