import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import { beforeEach, describe, expect, it } from "vitest";
import { userQueriesStub } from "../../src/worker/query/queries";
import { call, readEnvelope, type Fetch } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  cancelQuery,
  consume,
  serviceWith,
  stateOf,
  submit,
  submitOk,
  TestQueue,
  type QueryStatusData,
} from "../support/query";

const SHARE = { QUERY_MAX_RUNNING_PER_USER: "2", QUERY_MAX_QUEUED_PER_USER: "3" };

interface StoredSlots {
  admitted: { queryId: string; at: number }[];
  waiting: string[];
}

let counter = 0;
let user: LoggedIn;
let queue: TestQueue;
let service: Fetch;

beforeEach(async () => {
  user = await login(`fair_${++counter}`);
  queue = new TestQueue();
  service = serviceWith(queue, SHARE);
});

/** The user's UserQueries object (named by the user id, the access token's subject). */
function slotsObject(who: LoggedIn) {
  return userQueriesStub(env, String(decodeJwt(who.accessToken).sub));
}

/** The user's slots as their UserQueries object stores them. */
async function slotsOf(who: LoggedIn): Promise<StoredSlots> {
  return runInDurableObject(slotsObject(who), async (_instance, state) => {
    const slots = await state.storage.get<StoredSlots>("slots");
    return { admitted: slots?.admitted ?? [], waiting: slots?.waiting ?? [] };
  });
}

async function statusVia(token: string, queryId: string): Promise<QueryStatusData> {
  const response = await call(`/v1/query/${queryId}/status`, { headers: authHeader(token) }, service);
  return (await readEnvelope<QueryStatusData>(response, 200)).Data;
}

/** The query's status once it has succeeded, or after 10 s of asking. */
async function settled(token: string, queryId: string): Promise<QueryStatusData> {
  let status = await statusVia(token, queryId);
  for (let tries = 0; tries < 100 && status.Status !== "succeeded"; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    status = await statusVia(token, queryId);
  }
  return status;
}

async function submitMany(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await submitOk(user.accessToken, `SELECT ${i} AS n`, service));
  return ids;
}

describe("fair sharing of the engine", () => {
  it("should send at most QUERY_MAX_RUNNING_PER_USER of a user's queries to the queue and keep the rest in line", async () => {
    const ids = await submitMany(5);

    expect(queue.sent).toEqual([{ queryId: ids[0] }, { queryId: ids[1] }]);
    const slots = await slotsOf(user);
    expect(slots.admitted.map((slot) => slot.queryId)).toEqual(ids.slice(0, 2));
    expect(slots.waiting).toEqual(ids.slice(2));
  });

  it("should tell a waiting query's owner why it waits and how many of theirs are before it", async () => {
    const ids = await submitMany(4);

    expect(await statusVia(user.accessToken, ids[2]!)).toMatchObject({
      Status: "queued",
      Message:
        "Queued: waiting for its turn; 2 of your queries run at once (QUERY_MAX_RUNNING_PER_USER), and it is next.",
    });
    expect((await statusVia(user.accessToken, ids[3]!)).Message).toMatch(/1 of yours wait before it\.$/);
    expect((await statusVia(user.accessToken, ids[0]!)).Message).toBe("Queued; waiting for a worker to run it.");
  });

  it("should say which cancelled query still holds a slot the waiting one needs, until its statement stops", async () => {
    const ids = await submitMany(3);
    // Both admitted queries are running; the first is cancelled, and keeps its slot until the engine lets it go.
    await stateOf(ids[0]!).claim();
    await stateOf(ids[1]!).claim();
    expect((await cancelQuery(user.accessToken, ids[0]!)).status).toBe(200);

    expect((await statusVia(user.accessToken, ids[2]!)).Message).toBe(
      `Queued: waiting for its turn; 2 of your queries run at once (QUERY_MAX_RUNNING_PER_USER), and it is next. Your cancelled query ${ids[0]} holds a slot until its statement stops (at its next row, or at the time limit: QUERY_TIME_LIMIT_SECONDS).`,
    );
  });

  it("should refuse a submit beyond QUERY_MAX_QUEUED_PER_USER with 429 and Retry-After, keeping nothing of it", async () => {
    await submitMany(5);

    const refused = await submit(user.accessToken, { Sql: "SELECT 'one too many'" }, service);
    const body = await readEnvelope(refused, 429);

    expect(body.Status.Message).toBe(
      "3 of your queries are already waiting for their turn (the limit is QUERY_MAX_QUEUED_PER_USER); submit this one when some have finished, or cancel some.",
    );
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const listed = await call("/v1/me/queries", { headers: authHeader(user.accessToken) }, service);
    expect((await readEnvelope<{ QueryCount: number }>(listed, 200)).Data.QueryCount).toBe(5);
    expect((await slotsOf(user)).waiting).toHaveLength(3);
  });

  it("should give a finished query's slot to the oldest waiting query", async () => {
    const ids = await submitMany(4);

    await consume([ids[0]!]);

    const slots = await slotsOf(user);
    expect(slots.admitted.map((slot) => slot.queryId)).toEqual([ids[1], ids[2]]);
    expect(slots.waiting).toEqual([ids[3]]);
  });

  it("should take a cancelled waiting query out of line, and give a cancelled running query's slot away", async () => {
    const ids = await submitMany(5);

    await readEnvelope(await cancelQuery(user.accessToken, ids[3]!), 200);
    expect((await slotsOf(user)).waiting).toEqual([ids[2], ids[4]]);

    await readEnvelope(await cancelQuery(user.accessToken, ids[0]!), 200);
    const slots = await slotsOf(user);
    expect(slots.admitted.map((slot) => slot.queryId)).toEqual([ids[1], ids[2]]);
    expect(slots.waiting).toEqual([ids[4]]);
  });

  it("should admit another user's query at once while one user's line is full", async () => {
    await submitMany(5);
    const other = await login(`fair_other_${counter}`);

    const theirs = await submitOk(other.accessToken, "SELECT 'mine'", service);

    expect(queue.sent).toContainEqual({ queryId: theirs });
  });

  it("should take back a slot whose end was never reported once its lease has run out", async () => {
    const ids = await submitMany(3);
    await runInDurableObject(slotsObject(user), async (_instance, state) => {
      const slots = (await state.storage.get<StoredSlots>("slots"))!;
      slots.admitted[0]!.at = Date.now() - 24 * 3_600_000;
      await state.storage.put("slots", slots);
    });

    expect(await runDurableObjectAlarm(slotsObject(user))).toBe(true);

    const slots = await slotsOf(user);
    expect(slots.admitted.map((slot) => slot.queryId)).toEqual([ids[1], ids[2]]);
    expect(slots.waiting).toEqual([]);
  });

  it("should keep a cancelled running query's slot until the engine has let the query go", async () => {
    const ids = await submitMany(3);
    await stateOf(ids[0]!).claim();

    await readEnvelope(await cancelQuery(user.accessToken, ids[0]!), 200);
    const whileRunning = await slotsOf(user);
    await stateOf(ids[0]!).release();
    const afterRelease = await slotsOf(user);

    expect(whileRunning.admitted.map((slot) => slot.queryId)).toEqual([ids[0], ids[1]]);
    expect(whileRunning.waiting).toEqual([ids[2]]);
    expect(afterRelease.admitted.map((slot) => slot.queryId)).toEqual([ids[1], ids[2]]);
  });

  it("should lose no query when ends and submits of one user come at once", async () => {
    const slots = slotsObject(user);
    const share = { maxRunning: 1, maxWaiting: 1000, leaseMs: 3_600_000, overrunCoolDownMs: 60_000 };
    await slots.enter("first", share);
    await slots.enter("second", share);
    const newcomers = Array.from({ length: 40 }, (_, i) => `q${i}`);

    await Promise.all([slots.leave("first"), ...newcomers.map((id) => slots.enter(id, share)), slots.leave("second")]);

    const after = await slotsOf(user);
    const known = [...after.admitted.map((slot) => slot.queryId), ...after.waiting];
    expect(known.sort()).toEqual([...newcomers].sort());
    expect(after.admitted).toHaveLength(1);
  });

  it("should send again a query that holds a slot but never reached the queue, when its check comes", async () => {
    // The test queue keeps the message and runs nothing: as if the request had died before sending it.
    const [lost] = await submitMany(1);

    expect(await runDurableObjectAlarm(stateOf(lost!))).toBe(true);

    // Sent again to the real local queue, whose consumer runs it.
    expect((await settled(user.accessToken, lost!)).Status).toBe("succeeded");
  });

  it("should put a queued query in line when its check comes, even if its owner's share was never stored", async () => {
    // The submit's `enter` failed before the share was stored, and taking the state back failed too.
    const [lost] = await submitMany(1);
    await runInDurableObject(slotsObject(user), async (_instance, state) => state.storage.deleteAll());

    expect(await runDurableObjectAlarm(stateOf(lost!))).toBe(true);

    expect((await settled(user.accessToken, lost!)).Status).toBe("succeeded");
  });
});
