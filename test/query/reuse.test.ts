import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { isReusable } from "../../src/worker/query/reuse";
import { resultFormatKey, resultKeys } from "../../src/worker/storage/keys";
import { purgeExpiredResults } from "../../src/worker/query/retention";
import { followDownload, grant, uploadOk } from "../support/catalog";
import { call, dbFailing, readEnvelope } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  bareName,
  cancelQuery,
  consume,
  outcomeOf,
  queryGet,
  resultText,
  schemaFor,
  seedDataset,
  serviceWith,
  statusOf,
  submit,
  TestQueue,
  type QueryListData,
  type QueryStatusData,
} from "../support/query";

let owner: LoggedIn;
let reader: LoggedIn;
let stranger: LoggedIn;

const COLUMNS: [string, "INTEGER" | "STRING"][] = [
  ["id", "INTEGER"],
  ["label", "STRING"],
];
const CSV = "id,label\n1,one\n2,two\n3,three\n";

beforeAll(async () => {
  owner = await login("q_reuse_owner");
  reader = await login("q_reuse_reader");
  stranger = await login("q_reuse_stranger");
});

afterEach(() => {
  vi.useRealTimers();
});

/** A new dataset of the owner's with one item `items`; the query's SQL names it, so each test has SQL of its own. */
async function newItem(visibility: "private" | "public" = "private") {
  const dataset = bareName("reuse");
  await seedDataset(
    owner.accessToken,
    owner.accountName,
    dataset,
    { items: { columns: COLUMNS, csv: CSV } },
    visibility,
  );
  return {
    dataset,
    path: `${owner.accountName}/${dataset}/items`,
    sql: `SELECT id, label FROM ${owner.accountName}.${dataset}.items WHERE id >= 2 ORDER BY id`,
  };
}

interface Submitted {
  queryId: string;
  message: string;
  /** What the submit put in the queue: nothing when the query answered from an earlier result. */
  queued: boolean;
}

/** POST /v1/query through a queue the test controls; the query runs only when the test consumes it. */
async function submitted(
  user: LoggedIn,
  body: { Sql: string; Parameters?: unknown; Reuse?: boolean; Callback?: { Url: string } },
  overrides: Partial<Env> = {},
  headers: Record<string, string> = {},
): Promise<Submitted> {
  const queue = new TestQueue();
  const answer = await readEnvelope<{ QueryId: string }>(
    await submit(user.accessToken, body, serviceWith(queue, overrides), headers),
    200,
  );
  return { queryId: answer.Data.QueryId, message: answer.Status.Message, queued: queue.sent.length > 0 };
}

/** Submits SQL and runs it to its end; returns its status. */
async function ran(user: LoggedIn, sql: string, overrides: Partial<Env> = {}): Promise<QueryStatusData> {
  const query = await submitted(user, { Sql: sql }, overrides);
  expect(query.queued, `${query.message}: it should have run`).toBe(true);
  expect(outcomeOf(await consume([query.queryId]))).toEqual({ acked: 1, retried: [] });
  return statusOf(user.accessToken, query.queryId);
}

/** The Location of a query's rawdata redirect. */
async function downloadUrl(user: LoggedIn, queryId: string): Promise<string> {
  const redirect = await queryGet(user.accessToken, queryId, "results/rawdata");
  expect(redirect.status).toBe(302);
  return redirect.headers.get("location") ?? "";
}

/** The R2 key of a query's result, as its download URL (the Worker's own /download/ URL) names it. */
async function resultObjectOf(user: LoggedIn, queryId: string): Promise<string> {
  const location = new URL(await downloadUrl(user, queryId));
  return location.pathname
    .replace(/^\/download\//, "")
    .split("/")
    .map(decodeURIComponent)
    .join("/");
}

/** Runs the cron's purge as it would run `seconds` from now. */
async function purgeAt(seconds: number): Promise<void> {
  vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + seconds * 1000 });
  try {
    await purgeExpiredResults(env);
  } finally {
    vi.useRealTimers();
  }
}

/** Submits as if `seconds` from now (the lookup reads the clock). */
async function submittedAt(seconds: number, user: LoggedIn, sql: string, overrides: Partial<Env> = {}) {
  vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + seconds * 1000 });
  try {
    return await submitted(user, { Sql: sql }, overrides);
  } finally {
    vi.useRealTimers();
  }
}

async function deleteItem(user: LoggedIn, path: string): Promise<void> {
  await readEnvelope(await call(`/v1/data/${path}`, { method: "DELETE", headers: authHeader(user.accessToken) }), 200);
}

describe("result reuse", () => {
  it("should answer an identical query at once from the earlier result: a new query, succeeded, marked Reused", async () => {
    const { sql } = await newItem();
    const first = await ran(owner, sql);

    const again = await submitted(owner, { Sql: sql });

    expect(again.queued).toBe(false);
    expect(again.queryId).not.toBe(first.QueryId);
    expect(again.message).toBe("The query succeeded: it reused the result of an identical earlier query.");
    const status = await statusOf(owner.accessToken, again.queryId);
    expect(status).toMatchObject({
      QueryId: again.queryId,
      Status: "succeeded",
      Sql: sql,
      Reused: true,
      Size: first.Size,
      RowCount: 2,
      BytesLoaded: 0,
      PeakMemoryBytes: null,
      Timings: null,
      Engine: null,
      Message: `Succeeded: 2 rows, ${first.Size} bytes, reused from an identical earlier query.`,
    });
    expect(first).toMatchObject({ Reused: false, Engine: "sqljs" });
    expect(Date.parse(status.ExpiresAt ?? "")).toBeLessThanOrEqual(Date.parse(first.ExpiresAt ?? ""));
    expect(await resultText(owner.accessToken, again.queryId)).toBe("id,label\n2,two\n3,three\n");
    const schema = await readEnvelope<{ Schema: string }>(
      await queryGet(owner.accessToken, again.queryId, "results/metadata/schema"),
      200,
    );
    const firstSchema = await readEnvelope<{ Schema: string }>(
      await queryGet(owner.accessToken, first.QueryId, "results/metadata/schema"),
      200,
    );
    expect(schema.Data.Schema).toBe(firstSchema.Data.Schema);
  });

  it("should reuse another user's result for a caller who may read every item, never showing its query id", async () => {
    const { dataset, sql } = await newItem();
    await readEnvelope(await grant(owner.accessToken, owner.accountName, dataset, reader.accountName, "read"), 200);
    const first = await ran(owner, sql);

    const theirs = await submitted(reader, { Sql: sql });

    expect(theirs.queued).toBe(false);
    const status = await statusOf(reader.accessToken, theirs.queryId);
    expect(status).toMatchObject({ Status: "succeeded", Reused: true, RowCount: 2 });
    const location = await downloadUrl(reader, theirs.queryId);
    expect(JSON.stringify(status) + theirs.message + location).not.toContain(first.QueryId);
    expect(await (await followDownload(location)).text()).toBe("id,label\n2,two\n3,three\n");
    const listed = await readEnvelope<QueryListData>(
      await call("/v1/me/queries?limit=100", { headers: authHeader(reader.accessToken) }),
      200,
    );
    expect(JSON.stringify(listed.Data)).not.toContain(first.QueryId);
    expect(listed.Data.QueryList.find((q) => q.QueryId === theirs.queryId)).toMatchObject({ Reused: true });
  });

  it("should reuse a result over a public dataset for anyone", async () => {
    const { sql } = await newItem("public");
    await ran(owner, sql);

    const theirs = await submitted(stranger, { Sql: sql });

    expect(theirs.queued).toBe(false);
    expect(await resultText(stranger.accessToken, theirs.queryId)).toBe("id,label\n2,two\n3,three\n");
  });

  it("should not reuse a result for a user who may not read an item: the query runs and fails as it would", async () => {
    const { sql } = await newItem();
    await ran(owner, sql);

    const theirs = await submitted(stranger, { Sql: sql });

    expect(theirs.queued).toBe(true);
    await consume([theirs.queryId]);
    const status = await statusOf(stranger.accessToken, theirs.queryId);
    expect(status).toMatchObject({ Status: "failed", Reused: false });
    expect(status.Message).toMatch(/does not exist, or you may not read it/);
  });

  it("should not reuse a result once its grant is revoked, not even the caller's own", async () => {
    const { dataset, sql } = await newItem();
    await readEnvelope(await grant(owner.accessToken, owner.accountName, dataset, reader.accountName, "read"), 200);
    await ran(reader, sql);
    const revoked = await call(`/v1/dataset/${owner.accountName}/${dataset}/grants/${reader.accountName}`, {
      method: "DELETE",
      headers: authHeader(owner.accessToken),
    });
    await readEnvelope(revoked, 200);

    const again = await submitted(reader, { Sql: sql });

    expect(again.queued).toBe(true);
    await consume([again.queryId]);
    expect(await statusOf(reader.accessToken, again.queryId)).toMatchObject({ Status: "failed", Reused: false });
  });

  it("should not reuse a result across a new version of an item, even of the same bytes, and reuse the new one's", async () => {
    const { path, sql } = await newItem();
    await ran(owner, sql);
    await uploadOk(owner.accessToken, path, CSV, { Schema: schemaFor(COLUMNS) });

    const onNewVersion = await submitted(owner, { Sql: sql });

    expect(onNewVersion.queued).toBe(true);
    await consume([onNewVersion.queryId]);
    expect(await statusOf(owner.accessToken, onNewVersion.queryId)).toMatchObject({
      Status: "succeeded",
      Reused: false,
    });
    const third = await submitted(owner, { Sql: sql });
    expect(third.queued).toBe(false);
  });

  it("should key a result by the versions its run read, not those of its submit", async () => {
    const { path, sql } = await newItem();
    const queued = await submitted(owner, { Sql: sql });
    await uploadOk(owner.accessToken, path, "id,label\n2,zwei\n", { Schema: schemaFor(COLUMNS) });
    await consume([queued.queryId]);
    expect(await resultText(owner.accessToken, queued.queryId)).toBe("id,label\n2,zwei\n");

    const again = await submitted(owner, { Sql: sql });

    expect(again.queued).toBe(false);
    expect(await resultText(owner.accessToken, again.queryId)).toBe("id,label\n2,zwei\n");
  });

  it("should not reuse a result of a deleted item, nor of one deleted and uploaded again", async () => {
    const { path, sql } = await newItem();
    await ran(owner, sql);
    await deleteItem(owner, path);

    const deleted = await submitted(owner, { Sql: sql });
    await uploadOk(owner.accessToken, path, CSV, { Schema: schemaFor(COLUMNS) });
    const uploadedAgain = await submitted(owner, { Sql: sql });

    expect(deleted.queued).toBe(true);
    expect(uploadedAgain.queued).toBe(true);
  });

  it('should run the query when the request says "Reuse": false', async () => {
    const { sql } = await newItem();
    await ran(owner, sql);

    const fresh = await submitted(owner, { Sql: sql, Reuse: false });

    expect(fresh.queued).toBe(true);
    await consume([fresh.queryId]);
    expect(await statusOf(owner.accessToken, fresh.queryId)).toMatchObject({
      Status: "succeeded",
      Reused: false,
      Engine: "sqljs",
    });
  });

  it("should not reuse a result for SQL text that differs, even only in spacing or case", async () => {
    const { sql } = await newItem();
    await ran(owner, sql);

    const spaced = await submitted(owner, { Sql: `${sql} ` });
    const cased = await submitted(owner, { Sql: sql.replace("SELECT", "select") });

    expect(spaced.queued).toBe(true);
    expect(cased.queued).toBe(true);
  });

  it("should reuse only a result of the same Parameters, in whatever order their names come", async () => {
    const { dataset } = await newItem();
    const sql = `SELECT id, label FROM ${owner.accountName}.${dataset}.items WHERE id BETWEEN :low AND :high ORDER BY id`;
    const first = await submitted(owner, { Sql: sql, Parameters: { low: 1, high: 2 } });
    await consume([first.queryId]);

    const reordered = await submitted(owner, { Sql: sql, Parameters: { high: 2, low: 1 } });
    const other = await submitted(owner, { Sql: sql, Parameters: { low: 2, high: 3 } });
    const text = await submitted(owner, { Sql: sql, Parameters: { low: "1", high: 2 } });

    expect(reordered.queued).toBe(false);
    expect(await resultText(owner.accessToken, reordered.queryId)).toBe("id,label\n1,one\n2,two\n");
    expect(await statusOf(owner.accessToken, reordered.queryId)).toMatchObject({ Parameters: { high: 2, low: 1 } });
    expect(other.queued).toBe(true);
    expect(text.queued).toBe(true);
  });

  it("should not reuse a failed query, nor a query that reads the clock or random numbers", async () => {
    const { dataset } = await newItem();
    const failing = `SELECT nope FROM ${owner.accountName}.${dataset}.items`;
    expect((await ran(owner, failing)).Status).toBe("failed");
    const volatile = `SELECT id, random() AS r FROM ${owner.accountName}.${dataset}.items`;
    expect((await ran(owner, volatile)).Status).toBe("succeeded");

    expect((await submitted(owner, { Sql: failing })).queued).toBe(true);
    expect((await submitted(owner, { Sql: volatile })).queued).toBe(true);
  });

  it.each([
    ["SELECT random()", false],
    ["SELECT RANDOMBLOB(4)", false],
    ["SELECT date('now')", false],
    ["SELECT strftime('%Y', ts) FROM a.b.c", false],
    ["SELECT CURRENT_TIMESTAMP", false],
    ['SELECT "datetime"()', false],
    ["SELECT 'random()' AS text, date AS column FROM a.b.c -- now()", true],
    ["SELECT count(*), sum(x) FROM a.b.c", true],
  ])("should tell whether %s may be reused (%s)", (sql, reusable) => {
    expect(isReusable(sql)).toBe(reusable);
  });

  it("should not reuse an expired result, nor one about to expire", async () => {
    const { sql } = await newItem();
    const short = { QUERY_RESULT_RETENTION_SECONDS: "600" };
    await ran(owner, sql, short);

    // Half the retention (300 s) must be left: at 250 s there is, at 350 s there is not.
    const early = await submittedAt(250, owner, sql, short);
    const late = await submittedAt(350, owner, sql, short);
    const expired = await submittedAt(700, owner, sql, short);

    expect(early.queued).toBe(false);
    expect(late.queued).toBe(true);
    expect(expired.queued).toBe(true);
  });

  it("should not reuse a result the cron has deleted", async () => {
    const { sql } = await newItem();
    await ran(owner, sql, { QUERY_RESULT_RETENTION_SECONDS: "60" });
    await purgeAt(120);

    const again = await submitted(owner, { Sql: sql });

    expect(again.queued).toBe(true);
  });

  it("should share the result object until the last query pointing to it has expired", async () => {
    const { sql } = await newItem();
    const source = await ran(owner, sql, { QUERY_RESULT_RETENTION_SECONDS: "7200" });
    const objectKey = await resultObjectOf(owner, source.QueryId);
    // Reused under a shorter retention: it expires first, and the object stays for its source.
    const reused = await submitted(owner, { Sql: sql }, { QUERY_RESULT_RETENTION_SECONDS: "60" });
    const reusedStatus = await statusOf(owner.accessToken, reused.queryId);
    expect(reused.queued).toBe(false);
    expect(Date.parse(reusedStatus.ExpiresAt ?? "")).toBeLessThan(Date.parse(source.ExpiresAt ?? ""));
    const ndjson = await call(`/v1/query/${reused.queryId}/results/rawdata?format=ndjson`, {
      headers: authHeader(owner.accessToken),
    });
    expect(ndjson.status).toBe(302);
    const objects = async () =>
      (await Promise.all(resultKeys(objectKey).map((key) => env.BUCKET.head(key)))).filter(Boolean);

    await purgeAt(120);

    await readEnvelope(await queryGet(owner.accessToken, reused.queryId, "results/rawdata"), 410);
    expect(await objects()).toHaveLength(3); // the CSV, its row index and the NDJSON
    expect(await resultText(owner.accessToken, source.QueryId)).toBe("id,label\n2,two\n3,three\n");

    await purgeAt(7300);

    await readEnvelope(await queryGet(owner.accessToken, source.QueryId, "results/rawdata"), 410);
    expect(await objects()).toEqual([]);
  });

  it("should expire a reused result with its source, and delete the object once", async () => {
    const { sql } = await newItem();
    const source = await ran(owner, sql, { QUERY_RESULT_RETENTION_SECONDS: "60" });
    const objectKey = await resultObjectOf(owner, source.QueryId);
    const reused = await submitted(owner, { Sql: sql }, { QUERY_RESULT_RETENTION_SECONDS: "60" });
    expect(reused.queued).toBe(false);
    expect(await env.BUCKET.head(objectKey)).not.toBeNull();

    await purgeAt(120);

    expect(await env.BUCKET.head(objectKey)).toBeNull();
    await readEnvelope(await queryGet(owner.accessToken, reused.queryId, "results/rawdata"), 410);
    await readEnvelope(await queryGet(owner.accessToken, source.QueryId, "results/rawdata"), 410);
  });

  it("should page and convert a reused result from its source's objects, and share the formats made", async () => {
    const { dataset } = await newItem();
    const sql = `SELECT id, label FROM ${owner.accountName}.${dataset}.items ORDER BY id`;
    const source = await ran(owner, sql);
    const csvKey = await resultObjectOf(owner, source.QueryId);
    const reused = await submitted(owner, { Sql: sql });
    const get = (queryId: string, what: string) =>
      call(`/v1/query/${queryId}/results/${what}`, { headers: authHeader(owner.accessToken) });

    const page = await readEnvelope<{ Rows: unknown[][]; RowCount: number }>(await get(reused.queryId, "rows"), 200);
    const ndjson = await get(reused.queryId, "rawdata?format=ndjson");

    expect(reused.queued).toBe(false);
    expect(page.Data).toMatchObject({
      RowCount: 3,
      Rows: [
        [1, "one"],
        [2, "two"],
        [3, "three"],
      ],
    });
    expect(ndjson.status).toBe(302);
    expect(await (await followDownload(ndjson.headers.get("location") ?? "")).text()).toBe(
      '{"id":1,"label":"one"}\n{"id":2,"label":"two"}\n{"id":3,"label":"three"}\n',
    );
    // The NDJSON was made beside the source's CSV, and the source's own request finds it there.
    expect(await env.BUCKET.head(resultFormatKey(csvKey, "ndjson"))).not.toBeNull();
    const fromSource = await get(source.QueryId, "rawdata?format=ndjson");
    const path = (response: Response) => new URL(response.headers.get("location") ?? "").pathname;
    expect(path(fromSource)).toBe(path(ndjson));
  });

  it("should not count a reused answer as running or waiting: it answers while the caller's line is full", async () => {
    const user = await login("q_reuse_full_line");
    const dataset = bareName("reuse_line");
    await seedDataset(user.accessToken, user.accountName, dataset, { items: { columns: COLUMNS, csv: CSV } });
    const sql = `SELECT count(*) FROM ${user.accountName}.${dataset}.items`;
    const share = { QUERY_MAX_RUNNING_PER_USER: "1", QUERY_MAX_QUEUED_PER_USER: "1" };
    const first = await submitted(user, { Sql: sql }, share);
    await consume([first.queryId], share);
    // One running (never consumed) and one waiting: the line is full.
    await submitted(user, { Sql: "SELECT 1", Reuse: false }, share);
    await submitted(user, { Sql: "SELECT 2", Reuse: false }, share);
    const refused = await submit(user.accessToken, { Sql: sql, Reuse: false }, serviceWith(new TestQueue(), share));
    await readEnvelope(refused, 429);

    const reused = await submitted(user, { Sql: sql }, share);

    expect(reused.queued).toBe(false);
    expect(await statusOf(user.accessToken, reused.queryId)).toMatchObject({ Status: "succeeded", Reused: true });
  });

  it("should hand a reused query's completion webhook to the queue at once", async () => {
    const { sql } = await newItem();
    await ran(owner, sql);
    const sent: unknown[] = [];
    const webhooks = { send: async (body: unknown) => void sent.push(body) } as unknown as Queue;

    const hooked = await submitted(
      owner,
      { Sql: sql, Callback: { Url: "http://127.0.0.1:9/hook" } },
      { WEBHOOK_QUEUE: webhooks },
    );

    expect(hooked.queued).toBe(false);
    expect(sent).toEqual([{ queryId: hooked.queryId }]);
    expect(await statusOf(owner.accessToken, hooked.queryId)).toMatchObject({
      Reused: true,
      Callback: { Url: "http://127.0.0.1:9/hook", LastDelivery: null },
    });
  });

  it("should take a reused query back with 503 when its webhook cannot be queued, so a retry submits it", async () => {
    const { sql } = await newItem();
    await ran(owner, sql);
    const refusing = { send: () => Promise.reject(new Error("queue unavailable")) } as unknown as Queue;
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const body = { Sql: sql, Callback: { Url: "http://127.0.0.1:9/hook" } };
    const key = { "idempotency-key": crypto.randomUUID() };

    const refused = await submit(
      owner.accessToken,
      body,
      serviceWith(new TestQueue(), { WEBHOOK_QUEUE: refusing }),
      key,
    );
    errors.mockRestore();
    const sink = { send: async () => undefined } as unknown as Queue;
    const retried = await submitted(owner, body, { WEBHOOK_QUEUE: sink }, key);

    await readEnvelope(refused, 503);
    expect(retried).toMatchObject({ queued: false, message: expect.stringContaining("reused") });
  });

  it("should run the query when the earlier results cannot be looked up", async () => {
    const { sql } = await newItem();
    await ran(owner, sql);
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);

    const looked = await submitted(owner, { Sql: sql }, { DB: dbFailing(/reuse_key = /) });

    expect(looked.queued).toBe(true);
    expect(errors.mock.calls.map(([line]) => JSON.parse(String(line)).step)).toEqual(["look for a result to reuse"]);
    errors.mockRestore();
  });

  it("should answer a retried submit with the same Idempotency-Key with the same reused query", async () => {
    const { sql } = await newItem();
    await ran(owner, sql);
    const key = { "idempotency-key": crypto.randomUUID() };

    const first = await submitted(owner, { Sql: sql }, {}, key);
    const retried = await submitted(owner, { Sql: sql }, {}, key);

    expect(retried.queryId).toBe(first.queryId);
    expect(retried.message).toBe("The query with this Idempotency-Key was submitted before; its status is succeeded.");
  });

  it("should answer Prefer: wait at once, and refuse to cancel a reused query, which has ended", async () => {
    const { sql } = await newItem();
    await ran(owner, sql);

    const waited = await submitted(owner, { Sql: sql }, {}, { prefer: "wait=30" });
    const cancel = await cancelQuery(owner.accessToken, waited.queryId);

    expect(waited.message).toBe("The query succeeded: it reused the result of an identical earlier query.");
    expect((await readEnvelope(cancel, 400)).Status.Message).toBe(
      `Query ${waited.queryId} has already ended (succeeded); nothing to cancel.`,
    );
  });
});
