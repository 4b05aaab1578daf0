import { beforeAll, describe, expect, it } from "vitest";
import { DqsApiError, DqsQueryError, type DqsClient, type QueryStatus } from "../../src/sdk";
import { loggedInClient } from "./support";

const CSV = 'id,name,amount,ok\n1,"Smith, J",10.5,true\n2,,3,false\n';

let client: DqsClient;
let table: string;

beforeAll(async () => {
  const loggedIn = await loggedInClient("sdk-q");
  client = loggedIn.client;
  await client.createDataset(loggedIn.account, "d");
  await client.upload(loggedIn.account, "d", "orders.csv", CSV);
  table = `\`${loggedIn.account}.d.orders.csv\``;
});

describe("query()", () => {
  it("should submit, wait, and return rows typed by the result schema", async () => {
    const seen: string[] = [];

    const result = await client.query(
      `SELECT id, name, amount, ok, NULL AS missing, 9007199254740993 AS big FROM ${table} ORDER BY id`,
      { wait: 60, onStatus: (status) => seen.push(status.Status) },
    );

    expect(result.status.Status).toBe("succeeded");
    expect(seen.at(-1)).toBe("succeeded");
    expect(result.columns.map((c) => [c.name, c.type])).toEqual([
      ["id", "INTEGER"],
      ["name", "STRING"],
      ["amount", "DOUBLE"],
      ["ok", "BOOLEAN"],
      ["missing", "STRING"],
      ["big", "INTEGER"],
    ]);
    expect(result.rows).toEqual([
      { id: 1, name: "Smith, J", amount: 10.5, ok: true, missing: null, big: 9007199254740993n },
      { id: 2, name: null, amount: 3, ok: false, missing: null, big: 9007199254740993n },
    ]);
  });

  it("should return the result CSV as a stream", async () => {
    const result = await client.query(`SELECT name, amount FROM ${table} WHERE id = 1`, { as: "stream" });

    expect(await new Response(result.body).text()).toBe('name,amount\n"Smith, J",10.5\n');
    expect(result.size).toBe(result.status.Size);
  });

  it("should read only the first rows with a limit, saying whether more follow, and name them in column order", async () => {
    const status = await client.runQuery(`SELECT name AS z, id AS "1" FROM ${table} ORDER BY id`);

    const first = await client.queryRows(status.QueryId, { limit: 1 });
    expect(first).toMatchObject({ names: ["z", "1"], rows: [{ z: "Smith, J", 1: 1 }], more: true });
    const all = await client.queryRows(status.QueryId, { limit: 2 });
    expect(all).toMatchObject({
      rows: [
        { z: "Smith, J", 1: 1 },
        { z: null, 1: 2 },
      ],
      more: false,
    });
    expect(await client.queryRows(status.QueryId)).toEqual(all);
  });

  it("should answer an identical query from the earlier result, and run it again with reuse: false", async () => {
    const sql = `SELECT id, amount FROM ${table} WHERE amount > 5`;
    const first = await client.query(sql, { wait: 60 });

    const again = await client.query(sql, { wait: 60 });
    const fresh = await client.query(sql, { wait: 60, reuse: false });

    expect(first.status.Reused).toBe(false);
    expect(again.status).toMatchObject({ Status: "succeeded", Reused: true, Engine: null, Timings: null });
    expect(again.status.QueryId).not.toBe(first.status.QueryId);
    expect(again.rows).toEqual(first.rows);
    expect(fresh.status).toMatchObject({ Status: "succeeded", Reused: false, Engine: "sqljs" });
    expect(fresh.rows).toEqual(first.rows);
  });

  it("should throw a DqsQueryError with the reason when the query fails", async () => {
    const error = (await client.query(`DELETE FROM ${table}`).catch((e: unknown) => e)) as DqsQueryError;

    expect(error).toBeInstanceOf(DqsQueryError);
    expect(error.reason).toBe("failed");
    expect(error.query?.Status).toBe("failed");
    expect(error.message).toBe(`Query ${error.queryId} failed: ${error.query?.Message.replace(/^Failed: /, "")}`);
    await expect(client.queryResult(error.queryId)).rejects.toMatchObject({ code: 400 });
  });

  it("should refuse to cancel a query that has ended, with the service's message", async () => {
    const { status } = await client.query("SELECT 1 AS one");

    const error = await client.cancelQuery(status.QueryId).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({ code: 400, message: expect.stringContaining("already ended (succeeded)") });
  });
});

describe("the query endpoints one by one", () => {
  it("should return the same query for a repeated Idempotency-Key", async () => {
    const key = crypto.randomUUID();

    const first = await client.submitQuery("SELECT 1 AS one", { idempotencyKey: key });
    const again = await client.submitQuery("SELECT 1 AS one", { idempotencyKey: key });

    expect(again.queryId).toBe(first.queryId);
    await expect(client.submitQuery("SELECT 2", { idempotencyKey: key })).rejects.toBeInstanceOf(DqsApiError);
  });

  it("should report status, result schema and the caller's query list", async () => {
    const { queryId } = await client.submitQuery(`SELECT count(*) AS n FROM ${table}`, { waitSeconds: 20 });
    const status: QueryStatus = await client.waitForQuery(queryId);

    expect(await client.queryStatus(queryId)).toEqual(status);
    expect(status).toMatchObject({ QueryId: queryId, Status: "succeeded", RowCount: 1, Size: 4 });
    const schema = await client.queryResultSchema(queryId);
    expect(schema.TableDefinition?.Columns).toEqual([
      expect.objectContaining({ Name: "n", DataType: expect.objectContaining({ DataType: "INTEGER" }) }),
    ]);
    const page = await client.listQueries({ limit: 100 });
    expect(page.queries.map((q) => q.QueryId)).toContain(queryId);
  });

  it("should page through the query list with the cursor", async () => {
    const first = await client.listQueries({ limit: 1 });

    expect(first.queries).toHaveLength(1);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await client.listQueries({ limit: 1, cursor: first.nextCursor! });
    expect(second.queries[0]?.QueryId).not.toBe(first.queries[0]?.QueryId);
  });

  it("should answer 404 for another user's query", async () => {
    const other = await loggedInClient("sdk-q-other");
    const { queryId } = await client.submitQuery("SELECT 1");

    await expect(other.client.queryStatus(queryId)).rejects.toMatchObject({ code: 404 });
  });
});
