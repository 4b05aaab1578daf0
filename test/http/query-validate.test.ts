import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { IMAGE_FORMAT, VALUES_PER_RECORD } from "../../src/worker/query/engine/column-images";
import { dataItemRow } from "../support/catalog";
import { call, readEnvelope, workerWith, type Fetch } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import { bareName, failureOf, seedDataset, serviceWith, submit, TestQueue } from "../support/query";

interface ValidationData {
  Valid: boolean;
  Message: string;
  Columns: { Name: string; DataType: string | null }[];
  DataItems: { AccountName: string; DatasetName: string; DataName: string; Version: string; Bytes: number }[];
  Engine: "sqljs" | "store" | null;
  EstimatedSeconds: number | null;
}

let owner: LoggedIn;
let stranger: LoggedIn;
let dataset: string;
let sales: string;
let regions: string;

/** A bucket that fails every read: validation reads data only for its estimate, which it then leaves out. */
const NO_DATA = new Proxy(env.BUCKET, {
  get(target, property) {
    if (property === "get" || property === "head" || property === "list")
      return () => Promise.reject(new Error(`validation read R2 (${String(property)})`));
    return Reflect.get(target, property);
  },
});

beforeAll(async () => {
  owner = await login("q_validate");
  stranger = await login("q_validate_stranger");
  dataset = bareName("validate");
  await seedDataset(owner.accessToken, owner.accountName, dataset, {
    sales: {
      columns: [
        ["id", "INTEGER"],
        ["region", "STRING"],
        ["amount", "DOUBLE"],
        ["paid", "BOOLEAN"],
        ["day", "DATE"],
      ],
      csv: "id,region,amount,paid,day\n1,north,10.5,true,2024-01-02\n2,south,3,false,2024-01-03\n",
    },
    regions: {
      columns: [
        ["region", "STRING"],
        ["manager", "STRING"],
      ],
      csv: "region,manager\nnorth,Ann\n",
    },
  });
  sales = `${owner.accountName}.${dataset}.sales`;
  regions = `${owner.accountName}.${dataset}.regions`;
});

async function validate(
  token: string,
  body: unknown,
  via: Fetch = workerWith({ BUCKET: NO_DATA, QUERY_QUEUE: new TestQueue() }),
): Promise<ValidationData> {
  const response = await call(
    "/v1/query/validate",
    {
      method: "POST",
      headers: { ...authHeader(token), "content-type": "application/json" },
      body: JSON.stringify(body),
    },
    via,
  );
  return (await readEnvelope<ValidationData>(response, 200)).Data;
}

async function queryCount(token: string): Promise<number> {
  const list = await call("/v1/me/queries?limit=100", { headers: authHeader(token) });
  return (await readEnvelope<{ QueryCount: number }>(list, 200)).Data.QueryCount;
}

async function item(name: string) {
  const row = await dataItemRow(owner.accountName, dataset, name);
  if (!row) throw new Error(`no data item ${name}`);
  return row;
}

describe("POST /v1/query/validate", () => {
  it("should derive the result columns, the items with their versions and bytes, and the engine, running nothing", async () => {
    const queue = new TestQueue();
    const via = workerWith({ BUCKET: NO_DATA, QUERY_QUEUE: queue });
    const queriesBefore = await queryCount(owner.accessToken);

    const data = await validate(
      owner.accessToken,
      {
        Sql: `SELECT s.id, s.region, amount, paid, day, r.manager, count(*) AS n, CAST(amount AS INTEGER) AS whole, :label AS label, :ratio * 2 AS twice
              FROM ${sales} s JOIN ${regions} r ON r.region = s.region WHERE s.id > :min GROUP BY s.id`,
        Parameters: { label: "x", ratio: 0.5, min: 0 },
      },
      via,
    );

    const [salesRow, regionsRow] = [await item("sales"), await item("regions")];
    expect(data).toEqual({
      Valid: true,
      Message: `Valid: 10 columns; it would run in sql.js and read ${salesRow.size + regionsRow.size} bytes from storage.`,
      Columns: [
        { Name: "id", DataType: "INTEGER" },
        { Name: "region", DataType: "STRING" },
        { Name: "amount", DataType: "DOUBLE" },
        { Name: "paid", DataType: "BOOLEAN" },
        { Name: "day", DataType: "DATE" },
        { Name: "manager", DataType: "STRING" },
        { Name: "n", DataType: null },
        { Name: "whole", DataType: "INTEGER" },
        { Name: "label", DataType: "STRING" },
        { Name: "twice", DataType: null },
      ],
      DataItems: [
        {
          AccountName: owner.accountName,
          DatasetName: dataset,
          DataName: "sales",
          Version: salesRow.version,
          Bytes: salesRow.size,
        },
        {
          AccountName: owner.accountName,
          DatasetName: dataset,
          DataName: "regions",
          Version: regionsRow.version,
          Bytes: regionsRow.size,
        },
      ],
      Engine: "sqljs",
      // The bucket refuses reads, so no sample could be taken.
      EstimatedSeconds: null,
    });
    expect(queue.sent).toEqual([]);
    expect(await queryCount(owner.accessToken)).toBe(queriesBefore);
  });

  it("should estimate the column images of the columns used, where they are built", async () => {
    const row = await item("sales");
    const imageBytes = [101, 202, 303, 404, 505];
    await setItem("sales", "column_images", {
      format: IMAGE_FORMAT,
      valuesPerRecord: VALUES_PER_RECORD,
      rows: row.rowCount,
      columns: imageBytes.map((bytes, i) => ({ key: `images/${i}`, bytes })),
    });
    try {
      const data = await validate(owner.accessToken, { Sql: `SELECT region, sum(amount) FROM ${sales} GROUP BY 1` });
      // Naming no column, the query attaches the smallest image for its rows.
      const counted = await validate(owner.accessToken, { Sql: `SELECT count(*) FROM ${sales}` });

      expect(data).toMatchObject({ Valid: true, Engine: "sqljs", DataItems: [{ Bytes: 202 + 303 }] });
      expect(counted).toMatchObject({ Valid: true, DataItems: [{ Bytes: 101 }] });
    } finally {
      await setItem("sales", "column_images", null);
    }
  });

  it("should name the table store as the engine, reading nothing of the item that hosts the query", async () => {
    const [salesRow, regionsRow] = [await item("sales"), await item("regions")];
    await setItem("sales", "table_store", { state: "ready", rows: salesRow.rowCount, bytes: 4096 });
    try {
      const data = await validate(owner.accessToken, {
        Sql: `SELECT * FROM ${sales} JOIN ${regions} USING (region)`,
      });

      expect(data).toMatchObject({
        Valid: true,
        Engine: "store",
        Message: `Valid: 6 columns; it would run in the table store of ${sales} and read ${regionsRow.size} bytes from storage.`,
        DataItems: [
          { DataName: "sales", Bytes: 0 },
          { DataName: "regions", Bytes: regionsRow.size },
        ],
      });
      // While the store is being built, the query would wait for it.
      await setItem("sales", "table_store", { state: "building" });
      expect(await validate(owner.accessToken, { Sql: `SELECT id FROM ${sales}` })).toMatchObject({
        Valid: true,
        Engine: "store",
        Message: `Valid: 1 column; it would run in the table store of ${sales} once it is built and read 0 bytes from storage.`,
      });
    } finally {
      await setItem("sales", "table_store", null);
    }
  });

  it("should answer Valid false with the message the query fails with", async () => {
    const failing = [
      `SELECT nope FROM ${sales}`,
      `SELEC 1`,
      `DELETE FROM ${sales}`,
      `SELECT 1; SELECT 2`,
      `SELECT * FROM ${owner.accountName}.${dataset}.missing`,
      `SELECT 'open`,
      `SELECT * FROM \`sales.csv\``,
    ];
    for (const sql of failing) {
      const data = await validate(owner.accessToken, { Sql: sql });

      expect(data.Valid, sql).toBe(false);
      expect(data.Message, sql).toBe(await failureOf(owner.accessToken, sql));
      expect(data.Columns).toEqual([]);
    }
  });

  it("should say how a data item is named when the query names a table that is not one", async () => {
    const data = await validate(owner.accessToken, { Sql: "SELECT * FROM `sales.csv`" });

    expect(data.Message).toBe(
      "Failed: no such table: sales.csv. A data item is named account.dataset.item, with a part that holds a dot or a dash in backticks (alice.sales.`orders.csv`).",
    );
  });

  it("should answer Valid false for an item the caller may not read, as for one that does not exist", async () => {
    const data = await validate(stranger.accessToken, { Sql: `SELECT * FROM ${sales}` });

    expect(data).toEqual({
      Valid: false,
      Message: `Failed: table ${sales} does not exist, or you may not read it.`,
      Columns: [],
      DataItems: [],
      Engine: null,
      EstimatedSeconds: null,
    });
  });

  it("should name the closest items and columns the caller may read, and none the caller may not", async () => {
    const misspelt = `${owner.accountName}.${dataset}.sale`;

    expect((await validate(owner.accessToken, { Sql: `SELECT * FROM ${misspelt}` })).Message).toBe(
      `Failed: table ${misspelt} does not exist, or you may not read it. Did you mean ${sales}?`,
    );
    expect((await validate(owner.accessToken, { Sql: `SELECT regoin, amount FROM ${sales}` })).Message).toBe(
      "Failed: no such column: regoin. Did you mean region?",
    );
    // The stranger may not read the owner's private dataset: nothing of it is named.
    expect((await validate(stranger.accessToken, { Sql: `SELECT * FROM ${misspelt}` })).Message).toBe(
      `Failed: table ${misspelt} does not exist, or you may not read it.`,
    );
  });

  it("should estimate the time from samples of the data, for about what the engine then takes", async () => {
    const sql = `SELECT s.region, count(*) FROM ${sales} s JOIN ${regions} r ON r.region = s.region GROUP BY 1`;
    const queue = new TestQueue();
    const data = await validate(owner.accessToken, { Sql: sql }, workerWith({ QUERY_QUEUE: queue }));

    expect(data).toMatchObject({ Valid: true, Engine: "sqljs" });
    expect(queue.sent).toEqual([]);
    expect(data.EstimatedSeconds).toBeGreaterThanOrEqual(0);
    expect(data.EstimatedSeconds).toBeLessThan(1);
    expect(data.Message).toMatch(/, for about [\d.]+ s \(estimated from samples\)\.$/);
  });

  it("should answer Valid false with the 400 message of POST /v1/query for what it refuses", async () => {
    const refused = [
      { Sql: "SELECT :a" },
      { Sql: "SELECT :a", Parameters: { a: 1, b: 2 } },
      { Sql: "SELECT ?", Parameters: { a: 1 } },
      { Sql: "   " },
      { Sql: "SELECT length(?)", Parameters: ["x".repeat(100_001)] },
      { Sql: "SELECT 1", Callback: { Url: "ftp://hooks.example.com/dqs" } },
    ];
    for (const body of refused) {
      const data = await validate(owner.accessToken, body);
      const response = await submit(owner.accessToken, body, serviceWith(new TestQueue()));

      expect(data).toMatchObject({ Valid: false, Columns: [], Engine: null });
      expect(data.Message).toBe((await readEnvelope(response, 400)).Status.Message);
    }
  });

  it("should answer 400 for a body that is not a query, and 401 without a token", async () => {
    const bad = await call("/v1/query/validate", {
      method: "POST",
      headers: { ...authHeader(owner.accessToken), "content-type": "application/json" },
      body: JSON.stringify({ Query: "SELECT 1" }),
    });
    const anonymous = await call("/v1/query/validate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Sql: "SELECT 1" }),
    });

    expect((await readEnvelope(bad, 400)).Status.Message).toMatch(/^Invalid request: Sql: /);
    expect(anonymous.status).toBe(401);
  });
});

/** Sets a catalog column of a data item of the owner's dataset to a JSON value (or NULL), as a build would. */
async function setItem(name: string, column: "column_images" | "table_store", value: unknown): Promise<void> {
  const row = await item(name);
  await env.DB.prepare(`UPDATE data_items SET ${column} = ? WHERE object_key = ?`)
    .bind(value === null ? null : JSON.stringify(value), row.objectKey)
    .run();
}
