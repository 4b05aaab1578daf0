import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { runMaintenance } from "../../src/worker/maintenance/scheduled";
import { insertQuery, recordEnd } from "../../src/worker/query/history";
import { randomToken } from "../../src/worker/util/crypto";
import type { WebhookMessage } from "../../src/worker/webhooks/completion";
import { consumeWebhooks, MAX_ATTEMPTS, type DeliveryOptions } from "../../src/worker/webhooks/delivery";
import { call, readEnvelope } from "../support/http";
import { authHeader, login, userIdOf, type LoggedIn } from "../support/login";
import {
  cancelQuery,
  consume,
  eventually,
  serviceWith,
  statusOf,
  submit,
  TestQueue,
  type QueryStatusData,
} from "../support/query";

const PRODUCTION = { ENVIRONMENT: "production", OIDC_ISSUER: "https://idp.example.test", OIDC_CLIENT_SECRET: "secret" };

let user: LoggedIn;
let userId: string;

beforeAll(async () => {
  user = await login("hook_delivery");
  userId = await userIdOf(user);
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** A query's D1 row as a submit with a Callback writes it and, unless still running, as its end leaves it. */
async function finishedQuery(url: string | null, status: "succeeded" | "running" = "succeeded"): Promise<string> {
  const queryId = randomToken(16);
  const callback = url === null ? null : { url, lastDelivery: null };
  await insertQuery(
    env.DB,
    {
      queryId,
      ownerUserId: userId,
      sql: "SELECT 1 AS one",
      parameters: null,
      createdAt: new Date().toISOString(),
      callback,
    },
    null,
  );
  if (status === "succeeded")
    await recordEnd(env.DB, queryId, {
      status,
      message: "Succeeded: 1 row, 6 bytes.",
      updatedAt: "2026-11-24T00:00:01Z",
      size: 6,
      rowCount: 1,
      bytesLoaded: 0,
      peakMemoryBytes: null,
      timings: { queueWaitMs: 1, loadMs: 2, executeMs: 3, writeMs: 4 },
      engine: "sqljs",
      resultKey: `results/${queryId}.csv`,
      resultColumns: [{ name: "one", type: "INTEGER" }],
      expiresAt: "2030-01-01T00:00:00Z",
      reuseKey: null,
    });
  return queryId;
}

interface Received {
  url: string;
  init: RequestInit;
  headers: Record<string, string>;
  body: string;
}

/** A receiver for `send`: keeps every request and answers as told. */
function receiver(answer: (request: Received, index: number) => Response | Promise<Response>) {
  const received: Received[] = [];
  const send: NonNullable<DeliveryOptions["send"]> = async (url, init) => {
    const request = {
      url,
      init,
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      body: String(init.body),
    };
    received.push(request);
    return answer(request, received.length - 1);
  };
  return { send, received };
}

/** Runs the webhook consumer on one message per query, as attempt `attempts`; reports acks and retry delays. */
async function deliver(
  queryIds: string[],
  options: DeliveryOptions & { attempts?: number; env?: Partial<Env> } = {},
): Promise<{ acked: number; retried: (number | undefined)[] }> {
  const batch = createMessageBatch<WebhookMessage>(
    "dqs-webhooks",
    queryIds.map((queryId, i) => ({
      id: `hook-${queryId}-${i}`,
      timestamp: new Date(),
      attempts: options.attempts ?? 1,
      body: { queryId },
    })),
  );
  const retries = batch.messages.map((message) => vi.spyOn(message, "retry"));
  const ctx = createExecutionContext();
  await consumeWebhooks(batch, { ...env, ...options.env }, options);
  const result = await getQueueResult(batch, ctx);
  return {
    acked: result.explicitAcks.length,
    retried: retries.flatMap((spy) => spy.mock.calls.map(([retry]) => retry?.delaySeconds)),
  };
}

async function secret(): Promise<string> {
  const response = await call("/v1/me/webhook-secret", { headers: authHeader(user.accessToken) });
  return (await readEnvelope<{ Secret: string }>(response, 200)).Data.Secret;
}

async function attemptsOf(queryId: string) {
  const { results } = await env.DB.prepare(
    "SELECT attempt, url, status_code AS statusCode, error FROM webhook_deliveries WHERE query_id = ? ORDER BY attempt",
  )
    .bind(queryId)
    .all<{ attempt: number; url: string; statusCode: number | null; error: string | null }>();
  return results;
}

const ok = () => new Response(null, { status: 204 });

describe("delivering a completion webhook", () => {
  it("should POST the query's status Data as JSON, signed so that standardwebhooks verifies it", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook?run=1");
    const expected = await statusOf(user.accessToken, queryId);
    const hook = receiver(ok);

    expect(await deliver([queryId], hook)).toEqual({ acked: 1, retried: [] });

    expect(hook.received).toHaveLength(1);
    const [request] = hook.received as [Received];
    expect(request.url).toBe("http://127.0.0.1:9/hook?run=1");
    expect(request.init.method).toBe("POST");
    expect(request.init.redirect).toBe("manual");
    expect(request.init.signal).toBeInstanceOf(AbortSignal);
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["webhook-id"]).toBe(queryId);
    const verified = new Webhook(await secret()).verify(request.body, request.headers);
    expect(verified).toEqual(expected);
    expect(verified).toMatchObject({ QueryId: queryId, Status: "succeeded", RowCount: 1 });
  });

  it("should record the attempt and show it as the status's last delivery", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");

    await deliver([queryId], receiver(ok));

    const status = await statusOf(user.accessToken, queryId);
    expect(status.Callback).toEqual({
      Url: "http://127.0.0.1:9/hook",
      LastDelivery: {
        Attempt: 1,
        At: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        StatusCode: 204,
        Error: null,
        Delivered: true,
        NextAttemptAt: null,
      },
    });
    expect(await attemptsOf(queryId)).toEqual([
      { attempt: 1, url: "http://127.0.0.1:9/hook", statusCode: 204, error: null },
    ]);
  });

  it("should retry a failed delivery with growing delays, and give up after the last attempt", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");
    const hook = receiver(() => new Response("busy", { status: 503 }));
    const outcomes = [];
    const gapsSeconds: (number | null)[] = [];

    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      outcomes.push(await deliver([queryId], { ...hook, attempts: attempt }));
      const last = (await statusOf(user.accessToken, queryId)).Callback?.LastDelivery;
      expect(last).toMatchObject({ Attempt: attempt, StatusCode: 503, Delivered: false });
      expect(last?.Error).toBe("The receiver answered 503.");
      gapsSeconds.push(last?.NextAttemptAt ? (Date.parse(last.NextAttemptAt) - Date.parse(last.At)) / 1000 : null);
    }

    expect(outcomes).toEqual([
      { acked: 0, retried: [10] },
      { acked: 0, retried: [60] },
      { acked: 0, retried: [300] },
      { acked: 0, retried: [1800] },
      { acked: 0, retried: [7200] },
      { acked: 1, retried: [] },
    ]);
    // The status says when the next attempt is due: the delay after the attempt ended (At is when it began).
    expect(gapsSeconds.slice(0, 5)).toEqual(
      [10, 60, 300, 1800, 7200].map((delay) => expect.toSatisfy((gap: number) => gap >= delay && gap <= delay + 1)),
    );
    expect(gapsSeconds[5]).toBeNull();
    expect((await attemptsOf(queryId)).map((row) => [row.attempt, row.statusCode])).toEqual(
      [1, 2, 3, 4, 5, 6].map((attempt) => [attempt, 503]),
    );
    expect(hook.received.map((request) => request.headers["webhook-id"])).toEqual(Array(6).fill(queryId));
  });

  it("should show the attempt that delivered after one that failed", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");
    const hook = receiver((_request, index) => (index === 0 ? new Response(null, { status: 500 }) : ok()));

    expect(await deliver([queryId], { ...hook, attempts: 1 })).toEqual({ acked: 0, retried: [10] });
    expect(await deliver([queryId], { ...hook, attempts: 2 })).toEqual({ acked: 1, retried: [] });

    expect((await statusOf(user.accessToken, queryId)).Callback?.LastDelivery).toMatchObject({
      Attempt: 2,
      StatusCode: 204,
      Error: null,
      Delivered: true,
      NextAttemptAt: null,
    });
    expect(await attemptsOf(queryId)).toEqual([
      { attempt: 1, url: "http://127.0.0.1:9/hook", statusCode: 500, error: "The receiver answered 500." },
      { attempt: 2, url: "http://127.0.0.1:9/hook", statusCode: 204, error: null },
    ]);
    // The second attempt's body showed the first attempt's outcome; each was signed afresh.
    const second = JSON.parse(hook.received[1]!.body) as QueryStatusData;
    expect(second.Callback?.LastDelivery).toMatchObject({ Attempt: 1, StatusCode: 500 });
    new Webhook(await secret()).verify(hook.received[1]!.body, hook.received[1]!.headers);
  });

  it("should not follow a redirect, and count it as a failed attempt", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");
    const hook = receiver(
      () => new Response(null, { status: 307, headers: { location: "http://169.254.169.254/latest/meta-data" } }),
    );

    expect(await deliver([queryId], hook)).toEqual({ acked: 0, retried: [10] });

    expect(hook.received).toHaveLength(1);
    expect((await statusOf(user.accessToken, queryId)).Callback?.LastDelivery).toMatchObject({
      StatusCode: 307,
      Error: "The receiver answered 307 (a redirect); redirects are not followed.",
      Delivered: false,
    });
  });

  it("should give up on a receiver that does not answer in time, without holding the other deliveries", async () => {
    const slow = await finishedQuery("http://127.0.0.1:9/slow");
    const fast = await finishedQuery("http://127.0.0.1:9/fast");
    const events: string[] = [];
    let fastCalled!: () => void;
    const fastSeen = new Promise<void>((resolve) => (fastCalled = resolve));
    const hook = receiver(async (request) => {
      if (request.url.endsWith("/fast")) {
        events.push("fast answered");
        fastCalled();
        return ok();
      }
      events.push("slow called");
      // Had the deliveries gone one after the other, the fast one would only start after this one's timeout.
      await fastSeen;
      events.push("slow saw the fast one");
      return new Promise<Response>((_resolve, reject) =>
        request.init.signal?.addEventListener("abort", () => reject(request.init.signal?.reason)),
      );
    });

    const outcome = await deliver([slow, fast], { ...hook, timeoutMs: 1000 });

    expect(events).toEqual(["slow called", "fast answered", "slow saw the fast one"]);
    expect(outcome).toEqual({ acked: 1, retried: [10] });
    expect((await statusOf(user.accessToken, slow)).Callback?.LastDelivery).toMatchObject({
      StatusCode: null,
      Error: "The receiver did not answer within 1 s.",
      Delivered: false,
    });
    expect((await statusOf(user.accessToken, fast)).Callback?.LastDelivery).toMatchObject({ Delivered: true });
  });

  it("should record a receiver that cannot be reached, and retry it", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");
    const hook = receiver(() => {
      throw new TypeError("Network connection lost.");
    });

    expect(await deliver([queryId], hook)).toEqual({ acked: 0, retried: [10] });

    expect((await statusOf(user.accessToken, queryId)).Callback?.LastDelivery).toMatchObject({
      StatusCode: null,
      Error: "The receiver could not be reached: Network connection lost.",
    });
  });

  it("should sign with the old secret too after a rotation", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");
    const old = await secret();
    const rotated = await call("/v1/me/webhook-secret/rotate", {
      method: "POST",
      headers: authHeader(user.accessToken),
    });
    const current = (await readEnvelope<{ Secret: string }>(rotated, 200)).Data.Secret;
    const hook = receiver(ok);

    await deliver([queryId], hook);

    const [request] = hook.received as [Received];
    expect(request.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(current).verify(request.body, request.headers)).toMatchObject({ QueryId: queryId });
    expect(new Webhook(old).verify(request.body, request.headers)).toMatchObject({ QueryId: queryId });
  });

  it("should refuse, without sending, a URL the rules no longer accept (a development URL in production)", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");
    const hook = receiver(ok);

    expect(await deliver([queryId], { ...hook, env: PRODUCTION })).toEqual({ acked: 1, retried: [] });

    expect(hook.received).toHaveLength(0);
    const last = (await statusOf(user.accessToken, queryId)).Callback?.LastDelivery;
    expect(last).toMatchObject({ Attempt: 1, StatusCode: null, Delivered: false, NextAttemptAt: null });
    expect(last?.Error).toMatch(/^Callback\.Url must use https, not http\./);
  });

  it("should acknowledge without sending a message for a query that is not finished or has no Callback", async () => {
    const running = await finishedQuery("http://127.0.0.1:9/hook", "running");
    const without = await finishedQuery(null);
    const hook = receiver(ok);

    expect(await deliver([running, without, "noSuchQuery0000000000A"], hook)).toEqual({ acked: 3, retried: [] });

    expect(hook.received).toHaveLength(0);
  });

  it("should delete attempts older than the result retention in the maintenance run", async () => {
    const queryId = await finishedQuery("http://127.0.0.1:9/hook");
    await deliver([queryId], receiver(ok));
    await env.DB.prepare(
      `INSERT INTO webhook_deliveries (query_id, attempt, url, status_code, error, delivered, next_attempt_at, at, duration_ms)
       VALUES (?, 0, 'u', 204, NULL, 1, NULL, '2000-01-01T00:00:00Z', 1)`,
    )
      .bind(queryId)
      .run();
    vi.spyOn(console, "log").mockImplementation(() => {});

    await runMaintenance(env);

    expect((await attemptsOf(queryId)).map((row) => row.attempt)).toEqual([1]);
  });
});

describe("a completion webhook end to end in the Worker", () => {
  it("should deliver a signed webhook through the webhook queue when a submitted query succeeds or is cancelled", async () => {
    const prefix = `http://127.0.0.1:9/${crypto.randomUUID()}`;
    const received: Received[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (!url.startsWith(prefix)) return realFetch(input, init);
      received.push({
        url,
        init: init ?? {},
        headers: Object.fromEntries(new Headers(init?.headers).entries()),
        body: String(init?.body),
      });
      return ok();
    });
    const queue = new TestQueue();
    const service = serviceWith(queue);
    const submitWith = async (sql: string, url: string) =>
      (
        await readEnvelope<{ QueryId: string }>(
          await submit(user.accessToken, { Sql: sql, Callback: { Url: url } }, service),
          200,
        )
      ).Data.QueryId;

    const succeeded = await submitWith("SELECT 42 AS answer", `${prefix}/succeeded`);
    expect(await consume([succeeded])).toMatchObject({ acked: 1, retried: [] });
    const cancelled = await submitWith("SELECT 1", `${prefix}/cancelled`);
    expect((await cancelQuery(user.accessToken, cancelled)).status).toBe(200);

    const delivered = async (queryId: string) =>
      eventually(
        () => statusOf(user.accessToken, queryId),
        (status) => status.Callback?.LastDelivery?.Delivered === true,
      );
    const [first, second] = await Promise.all([delivered(succeeded), delivered(cancelled)]);

    const verifier = new Webhook(await secret());
    const byUrl = Object.fromEntries(received.map((request) => [request.url, request]));
    const succeededBody = verifier.verify(byUrl[`${prefix}/succeeded`]!.body, byUrl[`${prefix}/succeeded`]!.headers);
    const cancelledBody = verifier.verify(byUrl[`${prefix}/cancelled`]!.body, byUrl[`${prefix}/cancelled`]!.headers);
    expect(succeededBody).toMatchObject({ QueryId: succeeded, Status: "succeeded", RowCount: 1 });
    expect(cancelledBody).toMatchObject({ QueryId: cancelled, Status: "cancelled" });
    expect(received).toHaveLength(2);
    expect(first.Callback?.LastDelivery).toMatchObject({ Attempt: 1, StatusCode: 204 });
    expect(second.Callback?.LastDelivery).toMatchObject({ Attempt: 1, StatusCode: 204 });
  });
});
