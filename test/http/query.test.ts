import { env } from "cloudflare:workers";
import { base64url } from "jose";
import type { WorkMessage } from "../../src/worker/query/consumer";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { followDownload, schemaOf } from "../support/catalog";
import { call, dbFailing, readEnvelope, readUnauthorized } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  bareName,
  cancelQuery,
  consume,
  outcomeOf,
  queryGet,
  resultText,
  seedDataset,
  serviceWith,
  stateFailing,
  stateOf,
  statusOf,
  submit,
  submitOk,
  TestQueue,
  type QueryListData,
  type QueryStatusData,
} from "../support/query";

let owner: LoggedIn;
let stranger: LoggedIn;
let items: string;

beforeAll(async () => {
  owner = await login("q_http");
  stranger = await login("q_http_stranger");
  const dataset = bareName("http");
  await seedDataset(owner.accessToken, owner.accountName, dataset, {
    items: {
      columns: [
        ["id", "INTEGER"],
        ["label", "STRING"],
      ],
      csv: 'id,label\n1,one\n2,"two, too"\n3,\n',
    },
  });
  items = `${owner.accountName}.${dataset}.items`;
});

/** A query of the owner's that stays queued until the test runs it. */
async function queuedQuery(sql = `SELECT id, label FROM ${items} ORDER BY id`): Promise<string> {
  return submitOk(owner.accessToken, sql, serviceWith(new TestQueue()));
}

/** A query of the owner's, run to its end. */
async function finishedQuery(sql = `SELECT id, label FROM ${items} ORDER BY id`): Promise<string> {
  const queryId = await queuedQuery(sql);
  expect(outcomeOf(await consume([queryId]))).toEqual({ acked: 1, retried: [] });
  return queryId;
}

/** A query id of the right shape that no one ever submitted. */
function madeUpId(): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(16)));
}

async function errorMessage(response: Response, status: number): Promise<string> {
  return (await readEnvelope(response, status)).Status.Message;
}

const ENDPOINTS = ["status", "results/rawdata", "results/metadata/schema", "cancel"] as const;

function callEndpoint(token: string, queryId: string, endpoint: (typeof ENDPOINTS)[number]): Promise<Response> {
  return endpoint === "cancel" ? cancelQuery(token, queryId) : queryGet(token, queryId, endpoint);
}

describe("POST /v1/query", () => {
  it("should queue a query and answer with its id", async () => {
    const queue = new TestQueue();

    const response = await submit(owner.accessToken, { Sql: "SELECT 1" }, serviceWith(queue));

    const body = await readEnvelope<{ QueryId: string }>(response, 200);
    expect(body.Status.Message).toBe("The query is queued.");
    expect(queue.sent).toEqual([{ queryId: body.Data.QueryId }]);
    expect(await statusOf(owner.accessToken, body.Data.QueryId)).toMatchObject({ Status: "queued", Sql: "SELECT 1" });
  });

  it("should ask for a token", async () => {
    const response = await call("/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Sql: "SELECT 1" }),
    });

    await readUnauthorized(response);
  });

  it.each([
    ["a body that is not JSON", "SELECT 1"],
    ["no Sql", {}],
    ["Sql that is not a string", { Sql: 42 }],
    ["Sql null", { Sql: null }],
    ["empty Sql", { Sql: "" }],
    ["blank Sql", { Sql: " \n\t " }],
  ])("should refuse %s with 400 and queue nothing", async (_case, body) => {
    const queue = new TestQueue();

    const message = await errorMessage(await submit(owner.accessToken, body, serviceWith(queue)), 400);

    expect(message).toMatch(/Sql|JSON|body/i);
    expect(queue.sent).toEqual([]);
  });

  it("should refuse SQL over MAX_SQL_LENGTH with 400 naming the limit, and accept SQL at the limit", async () => {
    const queue = new TestQueue();
    const via = serviceWith(queue, { MAX_SQL_LENGTH: "10" });

    const over = await errorMessage(await submit(owner.accessToken, { Sql: "SELECT 1234" }, via), 400);
    const at = await submit(owner.accessToken, { Sql: "SELECT 123" }, via);

    expect(over).toBe("Sql is 11 characters long; the limit is 10.");
    expect(at.status).toBe(200);
    expect(queue.sent).toHaveLength(1);
  });

  it("should accept SQL that cannot run, and let the query fail with SQLite's message", async () => {
    const queryId = await queuedQuery("SELEC 1");

    await consume([queryId]);

    const status = await statusOf(owner.accessToken, queryId);
    expect(status.Status).toBe("failed");
    expect(status.Message).toMatch(/^Failed: .*syntax error/);
  });

  it("should refuse a field it does not know, naming it, rather than ignore a misspelt one", async () => {
    const queue = new TestQueue();

    const response = await submit(owner.accessToken, { Sql: "SELECT 1", reuse: false }, serviceWith(queue));

    expect((await readEnvelope(response, 400)).Status.Message).toMatch(/Unrecognized key: "reuse"/);
    expect(queue.sent).toEqual([]);
  });

  it("should take Parameters and Callback as null, as the status shows them", async () => {
    const queue = new TestQueue();

    const response = await submit(
      owner.accessToken,
      { Sql: "SELECT 1", Parameters: null, Callback: null, Reuse: false },
      serviceWith(queue),
    );

    const { QueryId } = (await readEnvelope<{ QueryId: string }>(response, 200)).Data;
    expect(queue.sent).toEqual([{ queryId: QueryId }]);
  });

  it("should answer a retried submit with the same Idempotency-Key with the same query, queued once", async () => {
    const queue = new TestQueue();
    const key = crypto.randomUUID();

    const first = await submitOk(owner.accessToken, "SELECT 7", serviceWith(queue), { "idempotency-key": key });
    const again = await submit(owner.accessToken, { Sql: "SELECT 7" }, serviceWith(queue), { "idempotency-key": key });

    const body = await readEnvelope<{ QueryId: string }>(again, 200);
    expect(body.Data.QueryId).toBe(first);
    expect(body.Status.Message).toMatch(/submitted before; its status is queued/);
    expect(queue.sent).toEqual([{ queryId: first }]);
  });

  it("should refuse an Idempotency-Key reused with different SQL", async () => {
    const queue = new TestQueue();
    const key = crypto.randomUUID();
    await submitOk(owner.accessToken, "SELECT 7", serviceWith(queue), { "idempotency-key": key });

    const message = await errorMessage(
      await submit(owner.accessToken, { Sql: "SELECT 8" }, serviceWith(queue), { "idempotency-key": key }),
      400,
    );

    expect(message).toMatch(/Idempotency-Key was already used for different SQL/);
    expect(queue.sent).toHaveLength(1);
  });

  it("should keep Idempotency-Keys apart between users", async () => {
    const queue = new TestQueue();
    const key = crypto.randomUUID();

    const mine = await submitOk(owner.accessToken, "SELECT 7", serviceWith(queue), { "idempotency-key": key });
    const theirs = await submitOk(stranger.accessToken, "SELECT 8", serviceWith(queue), { "idempotency-key": key });

    expect(theirs).not.toBe(mine);
    expect(queue.sent).toHaveLength(2);
  });

  describe("after a submit that failed part way", () => {
    beforeEach(() => {
      vi.spyOn(console, "error").mockImplementation(() => undefined);
    });

    afterEach(() => {});

    /** A queue whose sends fail, as Queues does when it is unavailable. */
    class UnavailableQueue extends TestQueue {
      override async send(): Promise<QueueSendResponse> {
        throw new Error("Queues is unavailable");
      }
    }

    /** The QueryId of a user's row under an Idempotency-Key, if there is one. */
    async function rowUnderKey(key: string): Promise<string | null> {
      const row = await env.DB.prepare("SELECT id FROM queries WHERE idempotency_key = ?")
        .bind(key)
        .first<{ id: string }>();
      return row?.id ?? null;
    }

    async function listed(token: string): Promise<string[]> {
      const response = await call("/v1/me/queries", { headers: authHeader(token) });
      return (await readEnvelope<QueryListData>(response, 200)).Data.QueryList.map((query) => query.QueryId);
    }

    it("should answer 503 when the query's state cannot be made after its row was written, and queue a retry with the same key", async () => {
      const user = await login(bareName("q_retry_state"));
      const queue = new TestQueue();
      const key = crypto.randomUUID();
      const failing = serviceWith(queue, { QUERY_STATE: stateFailing("create") });

      const failed = await submit(user.accessToken, { Sql: "SELECT 21" }, failing, { "idempotency-key": key });
      const leftBehind = await rowUnderKey(key);
      const retried = await submitOk(user.accessToken, "SELECT 21", serviceWith(queue), { "idempotency-key": key });
      const again = await submitOk(user.accessToken, "SELECT 21", serviceWith(queue), { "idempotency-key": key });

      expect((await readEnvelope(failed, 503)).Status.Message).toMatch(/submit it again shortly/);
      expect(leftBehind).toBeNull();
      expect(again).toBe(retried);
      expect(queue.sent).toEqual([{ queryId: retried }]);
      expect(await statusOf(user.accessToken, retried)).toMatchObject({ Status: "queued", Sql: "SELECT 21" });
      expect(await listed(user.accessToken)).toEqual([retried]);
    });

    it("should finish submitting the row left behind when taking the failed submit back failed too", async () => {
      const user = await login(bareName("q_retry_row"));
      const queue = new TestQueue();
      const key = crypto.randomUUID();
      const failing = serviceWith(queue, {
        QUERY_STATE: stateFailing("create"),
        DB: dbFailing(/^DELETE FROM queries/),
      });

      const failed = await submit(user.accessToken, { Sql: "SELECT 22" }, failing, { "idempotency-key": key });
      const leftBehind = await rowUnderKey(key);
      const retried = await submit(user.accessToken, { Sql: "SELECT 22" }, serviceWith(queue), {
        "idempotency-key": key,
      });

      await readEnvelope(failed, 503);
      expect(leftBehind).not.toBeNull();
      const body = await readEnvelope<{ QueryId: string }>(retried, 200);
      expect(body.Data.QueryId).toBe(leftBehind);
      expect(body.Status.Message).toBe("The query is queued.");
      expect(queue.sent).toEqual([{ queryId: leftBehind }]);
      expect(await statusOf(user.accessToken, body.Data.QueryId)).toMatchObject({ Status: "queued" });
    });

    /** A queue whose first send waits until `release` is called, then fails or goes through. */
    class HeldQueue extends TestQueue {
      // Declared before the promises that set them: a later field declaration would reset them.
      private opened!: (fail: boolean) => void;
      private arrived!: () => void;
      private readonly gate = new Promise<boolean>((resolve) => (this.opened = resolve));
      readonly reached = new Promise<void>((resolve) => (this.arrived = resolve));

      release(fail: boolean): void {
        this.opened(fail);
      }

      override async send(body: WorkMessage): Promise<QueueSendResponse> {
        this.arrived();
        if (await this.gate) throw new Error("Queues is unavailable");
        return super.send(body);
      }
    }

    for (const firstFails of [true, false])
      it(`should answer 409 to a submit with the key while the first is still being queued, never a QueryId that may vanish (the first ${firstFails ? "fails" : "succeeds"})`, async () => {
        const user = await login(bareName("q_key_race"));
        const key = crypto.randomUUID();
        const held = new HeldQueue();
        const queue = new TestQueue();

        const first = submit(user.accessToken, { Sql: "SELECT 24" }, serviceWith(held), { "idempotency-key": key });
        await held.reached;
        const meanwhile = await submit(user.accessToken, { Sql: "SELECT 24" }, serviceWith(queue), {
          "idempotency-key": key,
        });
        held.release(firstFails);
        const firstAnswer = await first;
        const retried = await submitOk(user.accessToken, "SELECT 24", serviceWith(queue), { "idempotency-key": key });

        expect(meanwhile.headers.get("Retry-After")).toBe("1");
        expect((await readEnvelope(meanwhile, 409)).Status.Message).toMatch(/still being queued; send it again/);
        if (firstFails) {
          await readEnvelope(firstAnswer, 503);
          expect(queue.sent).toEqual([{ queryId: retried }]);
        } else {
          expect((await readEnvelope<{ QueryId: string }>(firstAnswer, 200)).Data.QueryId).toBe(retried);
          expect(held.sent).toEqual([{ queryId: retried }]);
          expect(queue.sent).toEqual([]);
        }
        expect(await statusOf(user.accessToken, retried)).toMatchObject({ Status: "queued", Sql: "SELECT 24" });
        expect(await listed(user.accessToken)).toEqual([retried]);
      });

    it("should answer 503 when the query cannot be enqueued, give its slot back, and queue a retry with the same key", async () => {
      const user = await login(bareName("q_retry_queue"));
      const oneAtATime = { QUERY_MAX_RUNNING_PER_USER: "1" };
      const queue = new TestQueue();
      const key = crypto.randomUUID();

      const failed = await submit(
        user.accessToken,
        { Sql: "SELECT 23" },
        serviceWith(new UnavailableQueue(), oneAtATime),
        {
          "idempotency-key": key,
        },
      );
      const retried = await submitOk(user.accessToken, "SELECT 23", serviceWith(queue, oneAtATime), {
        "idempotency-key": key,
      });

      expect((await readEnvelope(failed, 503)).Status.Message).toMatch(/submit it again shortly/);
      // With one slot, the retry is sent at once only if the failed attempt gave its slot back.
      expect(queue.sent).toEqual([{ queryId: retried }]);
      expect(await statusOf(user.accessToken, retried)).toMatchObject({ Status: "queued", Sql: "SELECT 23" });
      expect(await listed(user.accessToken)).toEqual([retried]);
    });
  });

  it("should hold the answer with Prefer: wait until a running consumer has finished the query", async () => {
    const queue = new TestQueue({});

    const response = await submit(owner.accessToken, { Sql: `SELECT count(*) FROM ${items}` }, serviceWith(queue), {
      prefer: "wait=10",
    });

    const body = await readEnvelope<{ QueryId: string }>(response, 200);
    expect(body.Status.Message).toBe("The query succeeded.");
    expect(response.headers.get("preference-applied")).toBe("wait=10");
    expect((await statusOf(owner.accessToken, body.Data.QueryId)).Status).toBe("succeeded");
    expect((await queue.settled()).map(outcomeOf)).toEqual([{ acked: 1, retried: [] }]);
  });

  it("should give up waiting after the N seconds of Prefer: wait and answer that the query is still queued", async () => {
    const queue = new TestQueue();

    const response = await submit(owner.accessToken, { Sql: "SELECT 1" }, serviceWith(queue), { prefer: "wait=1" });

    // No consumer runs (the queue only records the message), so the answer can only come from the wait ending.
    const body = await readEnvelope<{ QueryId: string }>(response, 200);
    expect(response.headers.get("preference-applied")).toBe("wait=1");
    expect(queue.sent).toHaveLength(1);
    expect(body.Status.Message).toBe("The query is queued.");
    expect((await statusOf(owner.accessToken, body.Data.QueryId)).Status).toBe("queued");
  });

  it("should cap Prefer: wait at 30 seconds", async () => {
    const queue = new TestQueue({});

    const response = await submit(owner.accessToken, { Sql: "SELECT 1" }, serviceWith(queue), { prefer: "wait=600" });

    await readEnvelope(response, 200);
    expect(response.headers.get("preference-applied")).toBe("wait=30");
    await queue.settled();
  });
});

describe("GET /v1/query/{QueryId}/status", () => {
  it("should describe a queued query", async () => {
    const sql = `SELECT id FROM ${items}`;
    const queryId = await queuedQuery(sql);

    const status = await statusOf(owner.accessToken, queryId);

    expect(status).toMatchObject({ QueryId: queryId, Status: "queued", Sql: sql, Size: 0, ExpiresAt: null });
    expect(status.CreatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(status.UpdatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(status.Message).toMatch(/Queued/);
  });

  it("should report the size, rows and time facts of a succeeded query", async () => {
    const queryId = await finishedQuery();

    const status = await statusOf(owner.accessToken, queryId);

    expect(status).toMatchObject({
      Status: "succeeded",
      Size: 'id,label\n1,one\n2,"two, too"\n3,\n'.length,
      RowCount: 3,
    });
    expect(status.BytesLoaded).toBeGreaterThan(0);
    expect(status.PeakMemoryBytes).toBeGreaterThan(0);
    expect(status.Timings).toEqual({
      QueueWaitMs: expect.any(Number),
      LoadMs: expect.any(Number),
      ExecuteMs: expect.any(Number),
      WriteMs: expect.any(Number),
    });
    expect(Date.parse(status.ExpiresAt ?? "")).toBeGreaterThan(Date.now() + 6 * 86_400_000);
  });
});

describe("the endpoints of one query", () => {
  it.each(ENDPOINTS)(
    "should answer %s of another user's query exactly like a query that does not exist",
    async (endpoint) => {
      const queryId = await finishedQuery();
      const missing = madeUpId();

      const foreign = await errorMessage(await callEndpoint(stranger.accessToken, queryId, endpoint), 404);
      const unknown = await errorMessage(await callEndpoint(stranger.accessToken, missing, endpoint), 404);

      expect(foreign).toBe(`Query ${queryId} not found, or it is not yours.`);
      expect(unknown.replace(missing, queryId)).toBe(foreign);
      expect((await statusOf(owner.accessToken, queryId)).Status).toBe("succeeded");
    },
  );

  it.each(ENDPOINTS)("should answer %s of a malformed query id with 404", async (endpoint) => {
    expect(await errorMessage(await callEndpoint(owner.accessToken, "not-an-id", endpoint), 404)).toBe(
      "Query not-an-id not found, or it is not yours.",
    );
  });

  it.each(ENDPOINTS)("should ask for a token on %s", async (endpoint) => {
    const queryId = await queuedQuery();
    const response = await call(`/v1/query/${queryId}/${endpoint}`, {
      method: endpoint === "cancel" ? "POST" : "GET",
    });

    await readUnauthorized(response);
  });
});

describe("GET /v1/query/{QueryId}/results/rawdata", () => {
  it("should answer 400 still running for a queued query", async () => {
    const queryId = await queuedQuery();

    const message = await errorMessage(await queryGet(owner.accessToken, queryId, "results/rawdata"), 400);

    expect(message).toBe(`Query ${queryId} is still running (queued); try again when it has succeeded.`);
  });

  it("should answer 400 still running for a running query", async () => {
    const queryId = await queuedQuery();
    await stateOf(queryId).claim();

    const message = await errorMessage(await queryGet(owner.accessToken, queryId, "results/rawdata"), 400);

    expect(message).toMatch(/still running \(running\)/);
  });

  it("should answer 400 with the reason for a failed query", async () => {
    const queryId = await finishedQuery(`SELECT nope FROM ${items}`);

    const message = await errorMessage(await queryGet(owner.accessToken, queryId, "results/rawdata"), 400);

    expect(message).toMatch(new RegExp(`^Query ${queryId} has no result: it failed\\. Failed: .*no such column: nope`));
  });

  it("should answer 400 naming the state for a cancelled query", async () => {
    const queryId = await queuedQuery();
    await readEnvelope(await cancelQuery(owner.accessToken, queryId), 200);

    const message = await errorMessage(await queryGet(owner.accessToken, queryId, "results/rawdata"), 400);

    expect(message).toBe(`Query ${queryId} has no result: it cancelled. Cancelled by its owner.`);
  });

  it("should redirect a succeeded query to a signed URL that serves the result CSV", async () => {
    const queryId = await finishedQuery();

    const redirect = await queryGet(owner.accessToken, queryId, "results/rawdata");
    const location = redirect.headers.get("location") ?? "";
    const download = await followDownload(location);

    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("cache-control")).toBe("no-store");
    expect(location).toMatch(/^http:\/\/dqs\.test\/download\//);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    // Named after the one item it reads and when it was submitted, not after its id.
    expect(download.headers.get("content-disposition")).toMatch(
      /^attachment; filename="items-query-\d{4}-\d\d-\d\d-\d{6}\.csv"/,
    );
    expect(await download.text()).toBe('id,label\n1,one\n2,"two, too"\n3,\n');
  });

  it("should refuse the signed URL once it has been tampered with", async () => {
    const queryId = await finishedQuery();
    const location = (await queryGet(owner.accessToken, queryId, "results/rawdata")).headers.get("location") ?? "";

    const renamed = new URL(location);
    renamed.searchParams.set("filename", `${queryId}.csv`);
    const otherResult = new URL(location);
    otherResult.pathname = otherResult.pathname.replace(/[A-Za-z0-9_-]{8}\.csv$/, "AAAAAAAA.csv");

    expect((await followDownload(renamed.href)).status).toBe(403);
    expect((await followDownload(otherResult.href)).status).toBe(403);
  });
});

describe("GET /v1/query/{QueryId}/results/metadata/schema", () => {
  it("should answer 404 until the query has succeeded, then give the result's columns and types", async () => {
    const queryId = await queuedQuery(
      `SELECT id, label, id * 1.5 AS ratio, id > 1 AS big, NULL AS missing FROM ${items} ORDER BY id`,
    );

    const before = await errorMessage(await queryGet(owner.accessToken, queryId, "results/metadata/schema"), 404);
    await consume([queryId]);
    const after = await readEnvelope<{ Schema: string }>(
      await queryGet(owner.accessToken, queryId, "results/metadata/schema"),
      200,
    );

    expect(before).toBe(`Query ${queryId} has no result schema: it is queued.`);
    const schema = JSON.parse(after.Data.Schema) as {
      TableDefinition: { Columns: { Name: string; DataType: { DataType: string } }[] };
      DataSpecification: { FormatType: string; DataOptions: { Header: boolean; Delimiter: string } };
    };
    expect(schema.TableDefinition.Columns.map((column) => [column.Name, column.DataType.DataType])).toEqual([
      ["id", "INTEGER"],
      ["label", "STRING"],
      ["ratio", "DOUBLE"],
      ["big", "INTEGER"],
      ["missing", "STRING"],
    ]);
    expect(schema.DataSpecification).toMatchObject({
      FormatType: "CSV",
      DataOptions: { Header: true, Delimiter: "," },
    });
  });

  it("should keep a TIMESTAMP column's type and say its stored form, the form WHERE compares with", async () => {
    const dataset = bareName("ts");
    await seedDataset(owner.accessToken, owner.accountName, dataset, {
      events: {
        columns: [
          ["id", "INTEGER"],
          ["updated_at", "TIMESTAMP"],
        ],
        csv: "id,updated_at\n1,2024-03-01 18:07:14\n2,2024-03-02 09:00\n",
      },
    });
    const table = `${owner.accountName}.${dataset}.events`;
    const stored = { Nullable: true, StoredAs: "YYYY-MM-DD HH:MM:SS[.fff]" };
    const itemSchema = await schemaOf(owner.accessToken, `${owner.accountName}/${dataset}/events`);
    expect(itemSchema.TableDefinition.Columns.map((column) => column.DataType.DataTypeOptions)).toEqual([
      { Nullable: true },
      stored,
    ]);

    const withT = await finishedQuery(`SELECT * FROM ${table} WHERE updated_at = '2024-03-01T18:07:14'`);
    const asStored = await finishedQuery(`SELECT * FROM ${table} WHERE updated_at >= '2024-03-01 18:07:14'`);

    expect(await resultText(owner.accessToken, withT)).toBe("id,updated_at\n");
    expect(await resultText(owner.accessToken, asStored)).toBe(
      "id,updated_at\n1,2024-03-01 18:07:14\n2,2024-03-02 09:00:00\n",
    );
    const result = await readEnvelope<{ Schema: string }>(
      await queryGet(owner.accessToken, asStored, "results/metadata/schema"),
      200,
    );
    expect(JSON.parse(result.Data.Schema)).toMatchObject({
      TableDefinition: {
        Columns: [
          { Name: "id", DataType: { DataType: "INTEGER", DataTypeOptions: { Nullable: true } } },
          { Name: "updated_at", DataType: { DataType: "TIMESTAMP", DataTypeOptions: stored } },
        ],
      },
    });
  });

  it("should answer 404 for a failed query", async () => {
    const queryId = await finishedQuery("SELECT * FROM nobody.nothing.none");

    const message = await errorMessage(await queryGet(owner.accessToken, queryId, "results/metadata/schema"), 404);

    expect(message).toBe(`Query ${queryId} has no result schema: it is failed.`);
  });
});

describe("POST /v1/query/{QueryId}/cancel", () => {
  it("should cancel a queued query", async () => {
    const queryId = await queuedQuery();

    const body = await readEnvelope<QueryStatusData>(await cancelQuery(owner.accessToken, queryId), 200);

    expect(body.Data).toMatchObject({ QueryId: queryId, Status: "cancelled", Message: "Cancelled by its owner." });
    expect((await statusOf(owner.accessToken, queryId)).Status).toBe("cancelled");
  });

  it("should cancel a running query", async () => {
    const queryId = await queuedQuery();
    await stateOf(queryId).claim();

    const body = await readEnvelope<QueryStatusData>(await cancelQuery(owner.accessToken, queryId), 200);

    expect(body.Data.Status).toBe("cancelled");
  });

  it.each([
    ["succeeded", () => `SELECT id FROM ${items}`],
    ["failed", () => "SELECT * FROM nobody.nothing.none"],
  ])("should answer 400 naming the state when the query has %s", async (state, sql) => {
    const queryId = await finishedQuery(sql());
    const before = await statusOf(owner.accessToken, queryId);

    const message = await errorMessage(await cancelQuery(owner.accessToken, queryId), 400);

    expect(message).toBe(`Query ${queryId} has already ended (${state}); nothing to cancel.`);
    expect(await statusOf(owner.accessToken, queryId)).toEqual(before);
  });

  it("should answer 400 naming the state when the query was already cancelled", async () => {
    const queryId = await queuedQuery();
    await cancelQuery(owner.accessToken, queryId);

    const message = await errorMessage(await cancelQuery(owner.accessToken, queryId), 400);

    expect(message).toBe(`Query ${queryId} has already ended (cancelled); nothing to cancel.`);
  });
});

describe("GET /v1/me/queries", () => {
  async function page(token: string, query: string): Promise<QueryListData> {
    return (
      await readEnvelope<QueryListData>(await call(`/v1/me/queries${query}`, { headers: authHeader(token) }), 200)
    ).Data;
  }

  it("should list the caller's queries newest first, a page at a time", async () => {
    const lister = await login(bareName("q_lister"));
    const queue = new TestQueue();
    const submitted: string[] = [];
    for (let i = 0; i < 5; i++) submitted.push(await submitOk(lister.accessToken, `SELECT ${i}`, serviceWith(queue)));
    await submitOk(owner.accessToken, "SELECT 'not the lister''s'", serviceWith(queue));

    const pages: QueryListData[] = [await page(lister.accessToken, "?limit=2")];
    while (pages.at(-1)?.NextCursor)
      pages.push(await page(lister.accessToken, `?limit=2&cursor=${pages.at(-1)?.NextCursor ?? ""}`));

    expect(pages.map((p) => p.QueryCount)).toEqual([2, 2, 1]);
    expect(pages.flatMap((p) => p.QueryList.map((query) => query.QueryId))).toEqual(submitted.reverse());
    expect(pages.flatMap((p) => p.QueryList.map((query) => query.Sql))).toEqual([
      "SELECT 4",
      "SELECT 3",
      "SELECT 2",
      "SELECT 1",
      "SELECT 0",
    ]);
  });

  it("should list queries that have ended from their rows alone, without asking their Durable Objects", async () => {
    const lister = await login(bareName("q_ended"));
    const ended = [];
    for (const sql of ["SELECT 'a'", "SELECT 'b'"]) {
      const queryId = await submitOk(lister.accessToken, sql, serviceWith(new TestQueue()));
      await consume([queryId]);
      ended.push(queryId);
    }
    const unreachable = serviceWith(new TestQueue(), { QUERY_STATE: stateFailing("get") });

    const response = await call("/v1/me/queries", { headers: authHeader(lister.accessToken) }, unreachable);
    const status = await call(`/v1/query/${ended[0]}/status`, { headers: authHeader(lister.accessToken) }, unreachable);

    const list = (await readEnvelope<QueryListData>(response, 200)).Data.QueryList;
    expect(list.map((query) => [query.QueryId, query.Status, query.RowCount])).toEqual([
      [ended[1], "succeeded", 1],
      [ended[0], "succeeded", 1],
    ]);
    expect((await readEnvelope<QueryStatusData>(status, 200)).Data).toEqual(list[1]);
  });

  it("should give an empty list to a caller who has run nothing", async () => {
    const newcomer = await login(bareName("q_new"));

    expect(await page(newcomer.accessToken, "")).toEqual({ QueryCount: 0, QueryList: [], NextCursor: null });
  });

  it.each([["?limit=0"], ["?limit=101"], ["?limit=abc"], ["?cursor=not-a-cursor"]])(
    "should refuse %s with 400",
    async (query) => {
      await readEnvelope(await call(`/v1/me/queries${query}`, { headers: authHeader(owner.accessToken) }), 400);
    },
  );
});
