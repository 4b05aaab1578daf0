import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { findQuery, insertQuery } from "../../src/worker/query/history";
import { purgeExpiredResults } from "../../src/worker/query/retention";
import { resultKeys, resultObjectKey } from "../../src/worker/storage/keys";
import { randomToken } from "../../src/worker/util/crypto";
import { call, readEnvelope } from "../support/http";
import { authHeader, login, userIdOf, type LoggedIn } from "../support/login";
import { consume, queryGet, recordOf, resultText, serviceWith, statusOf, submitOk, TestQueue } from "../support/query";

const RETENTION = { QUERY_RESULT_RETENTION_SECONDS: "60" };

let user: LoggedIn;

beforeAll(async () => {
  user = await login("q_retention");
});

afterEach(() => {
  vi.useRealTimers();
});

async function succeeded(sql = "SELECT 'kept' AS word"): Promise<string> {
  const queryId = await submitOk(user.accessToken, sql, serviceWith(new TestQueue(), RETENTION));
  await consume([queryId]);
  return queryId;
}

function formatOf(queryId: string, format: string): Promise<Response> {
  return call(`/v1/query/${queryId}/results/rawdata?format=${format}`, { headers: authHeader(user.accessToken) });
}

/** Runs the purge as the cron would at a moment `seconds` from now. */
async function purgeAt(seconds: number, overrides: Partial<Env> = RETENTION): Promise<number> {
  vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + seconds * 1000 });
  try {
    return await purgeExpiredResults({ ...env, ...overrides });
  } finally {
    vi.useRealTimers();
  }
}

describe("purgeExpiredResults", () => {
  it("should report when the result expires, delete it and every format made of it after that, and answer 410 for it from then on", async () => {
    const queryId = await succeeded();
    for (const format of ["ndjson", "parquet", "arrow"]) expect((await formatOf(queryId, format)).status).toBe(302);
    const keys = resultKeys(await resultObjectKey(queryId));
    const kept = await Promise.all(keys.map((key) => env.BUCKET.head(key)));
    const before = await statusOf(user.accessToken, queryId);
    const reportedExpiry = Date.parse(before.ExpiresAt ?? "");

    const purged = await purgeAt(120);

    expect(reportedExpiry - Date.now()).toBeGreaterThan(50_000);
    expect(reportedExpiry - Date.now()).toBeLessThanOrEqual(60_000);
    expect(purged).toBeGreaterThanOrEqual(1);
    for (const key of keys) expect(await env.BUCKET.head(key), key).toBeNull();
    const after = await statusOf(user.accessToken, queryId);
    expect(after).toMatchObject({ Status: "succeeded", ExpiresAt: before.ExpiresAt, Size: before.Size });
    expect(after.Message).toBe("Succeeded; the result has expired and was deleted.");
    expect(kept.every((object) => object !== null)).toBe(true);
    const expired = `The result of query ${queryId} expired at ${before.ExpiresAt} and was deleted; run the query again.`;
    const gone = await readEnvelope(await queryGet(user.accessToken, queryId, "results/rawdata"), 410);
    expect(gone.Status.Message).toBe(expired);
    expect((await readEnvelope(await formatOf(queryId, "parquet"), 410)).Status.Message).toBe(expired);
  });

  it("should keep a result whose time has not come, and delete it on a later run once it has", async () => {
    const queryId = await succeeded("SELECT 'later' AS word");

    const early = await purgeAt(30, { QUERY_RESULT_RETENTION_SECONDS: "1" });
    const kept = await resultText(user.accessToken, queryId);
    await purgeAt(120);

    expect(early).toBe(0);
    expect(kept).toBe("word\nlater\n");
    expect(await env.BUCKET.head(await resultObjectKey(queryId))).toBeNull();
  });

  it("should keep every result while the retention time lasts", async () => {
    const queryId = await succeeded("SELECT 'fresh' AS word");

    await purgeAt(0);

    expect(await resultText(user.accessToken, queryId)).toBe("word\nfresh\n");
  });

  it("should delete a row whose submit never made its state, once the retention time has passed", async () => {
    const queryId = randomToken(16);
    const row = {
      queryId,
      ownerUserId: await userIdOf(user),
      sql: "SELECT 1",
      parameters: null,
      createdAt: new Date().toISOString(),
    };
    await insertQuery(env.DB, row, null);

    await purgeAt(0);
    const early = await findQuery(env.DB, queryId);
    await purgeAt(120);

    expect(early).not.toBeNull();
    expect(await findQuery(env.DB, queryId)).toBeNull();
  });

  it("should leave a query that has not ended alone", async () => {
    const queryId = await submitOk(user.accessToken, "SELECT 1", serviceWith(new TestQueue()));
    const before = await recordOf(queryId);

    await purgeAt(120);

    expect(await recordOf(queryId)).toEqual(before);
    const row = await env.DB.prepare("SELECT result_purged_at AS purgedAt FROM queries WHERE id = ?")
      .bind(queryId)
      .first<{ purgedAt: string | null }>();
    expect(row?.purgedAt).toBeNull();
  });
});
