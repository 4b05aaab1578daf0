import { tableFromIPC } from "apache-arrow";
import { env } from "cloudflare:workers";
import { parquetMetadata, parquetReadObjects, parquetSchema } from "hyparquet";
import Papa from "papaparse";
import { beforeAll, describe, expect, it } from "vitest";
import { resultFormatKey, resultObjectKey } from "../../src/worker/storage/keys";
import { followDownload } from "../support/catalog";
import { call, readEnvelope, workerWith, type Fetch } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import { consume, queryGet, resultText, seedDataset, serviceWith, submitOk, TestQueue } from "../support/query";

let owner: LoggedIn;

beforeAll(async () => {
  owner = await login("q_formats");
});

async function finishedQuery(sql: string): Promise<string> {
  const queryId = await submitOk(owner.accessToken, sql, serviceWith(new TestQueue()));
  await consume([queryId]);
  return queryId;
}

function rawdata(queryId: string, format: string, via?: Fetch): Promise<Response> {
  return call(`/v1/query/${queryId}/results/rawdata?format=${format}`, { headers: authHeader(owner.accessToken) }, via);
}

/** The file of a format, through the redirect and the signed URL, as a client downloads it. */
async function download(queryId: string, format: string): Promise<{ bytes: Uint8Array; response: Response }> {
  const redirect = await rawdata(queryId, format);
  expect(redirect.status, await redirect.clone().text()).toBe(302);
  const response = await followDownload(redirect.headers.get("location") ?? "");
  expect(response.status).toBe(200);
  return { bytes: new Uint8Array(await response.arrayBuffer()), response };
}

/** The result CSV's rows, each field converted by its column's type as a typed file must hold it. */
async function csvValues(queryId: string, types: string[]): Promise<unknown[][]> {
  const [, ...rows] = Papa.parse<string[]>(await resultText(owner.accessToken, queryId), {
    skipEmptyLines: false,
  }).data;
  rows.pop(); // the line end after the last row
  return rows.map((row) =>
    row.map((text, i) =>
      text === "" ? null : types[i] === "INTEGER" ? BigInt(text) : types[i] === "DOUBLE" ? Number(text) : text,
    ),
  );
}

async function parquetOf(queryId: string) {
  const { bytes } = await download(queryId, "parquet");
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const metadata = parquetMetadata(file);
  const columns = parquetSchema(metadata).children.map((child) => ({
    name: child.element.name,
    type: child.element.type,
    converted: child.element.converted_type,
    repetition: child.element.repetition_type,
  }));
  const names = columns.map((column) => column.name);
  const objects = await parquetReadObjects({ file });
  return { metadata, columns, rows: objects.map((object) => names.map((name) => object[name])) };
}

async function arrowOf(queryId: string) {
  const table = tableFromIPC((await download(queryId, "arrow")).bytes);
  return {
    table,
    fields: table.schema.fields.map((field) => ({
      name: field.name,
      type: String(field.type),
      nullable: field.nullable,
    })),
    rows: table
      .toArray()
      .map((row) => table.schema.fields.map((field) => (row as Record<string, unknown>)[field.name])),
  };
}

describe("GET /v1/query/{QueryId}/results/rawdata?format=", () => {
  // Every kind of value a result holds: 64-bit integers, reals, text that needs quoting, NULLs, repeated names.
  let typed: string;
  const types = ["INTEGER", "DOUBLE", "STRING", "INTEGER", "STRING"];

  beforeAll(async () => {
    typed = await finishedQuery(
      `SELECT column1 AS a, column2 AS b, column3 AS c, column4 AS a, column5 AS A FROM (VALUES
        (9223372036854775807, 1.5, 'x', NULL, 1),
        (-9223372036854775808, -2.0, 'a,"b"' || char(10) || 'ü日本', 7, 'one'),
        (9007199254740993, 1e300, 'plain', NULL, 2.5),
        (NULL, NULL, NULL, NULL, NULL))`,
    );
  });

  it("should write Parquet whose columns carry the result's types and hold exactly the CSV's rows", async () => {
    const parquet = await parquetOf(typed);

    expect(parquet.columns).toEqual([
      { name: "a", type: "INT64", converted: undefined, repetition: "OPTIONAL" },
      { name: "b", type: "DOUBLE", converted: undefined, repetition: "OPTIONAL" },
      { name: "c", type: "BYTE_ARRAY", converted: "UTF8", repetition: "OPTIONAL" },
      { name: "a_2", type: "INT64", converted: undefined, repetition: "OPTIONAL" },
      { name: "A_3", type: "BYTE_ARRAY", converted: "UTF8", repetition: "OPTIONAL" },
    ]);
    expect(parquet.rows).toEqual(await csvValues(typed, types));
    expect(parquet.rows[0]![0]).toBe(9223372036854775807n);
  });

  it("should write an Arrow IPC file whose fields carry the result's types and hold exactly the CSV's rows", async () => {
    const arrow = await arrowOf(typed);

    expect(arrow.fields).toEqual([
      { name: "a", type: "Int64", nullable: true },
      { name: "b", type: "Float64", nullable: true },
      { name: "c", type: "Utf8", nullable: true },
      { name: "a_2", type: "Int64", nullable: true },
      { name: "A_3", type: "Utf8", nullable: true },
    ]);
    expect(arrow.rows).toEqual(await csvValues(typed, types));
  });

  it("should write NDJSON: one object per row, keyed by column name, typed as the rows endpoint types them", async () => {
    const { bytes, response } = await download(typed, "ndjson");
    const rows = await readEnvelope<{ Rows: unknown[][] }>(
      await call(`/v1/query/${typed}/results/rows`, { headers: authHeader(owner.accessToken) }),
      200,
    );

    const text = new TextDecoder().decode(bytes);
    expect(response.headers.get("content-type")).toBe("application/x-ndjson");
    expect(text.endsWith("\n")).toBe(true);
    expect(
      text
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual(
      rows.Data.Rows.map((row) => Object.fromEntries(["a", "b", "c", "a_2", "A_3"].map((name, i) => [name, row[i]]))),
    );
    expect(JSON.parse(text.split("\n")[0]!)).toEqual({ a: "9223372036854775807", b: 1.5, c: "x", a_2: null, A_3: "1" });
  });

  it("should carry integers on both sides of 32 and 53 bits and text beyond ASCII exactly", async () => {
    // Safe integers are stored as two 32-bit halves, longer ones through BigInt; text offsets count UTF-8 bytes.
    const queryId = await finishedQuery(
      `SELECT column1 AS n, column2 AS t FROM (VALUES
        (-1, 'é'), (-4294967297, '😀 emoji'), (4294967296, NULL), (2147483648, ''), (-2147483649, 'ascii'),
        (999999999999999, '日本語😀x'), (-999999999999999, 'z'), (1000000000000000, NULL), (-9007199254740993, 'ü'),
        (NULL, 'end'))`,
    );
    // papaparse cannot tell "" from an empty field, so the texts are given as the VALUES have them.
    const texts = ["é", "😀 emoji", null, "", "ascii", "日本語😀x", "z", null, "ü", "end"];
    const expected = (await csvValues(queryId, ["INTEGER", "STRING"])).map(([n], i) => [n, texts[i]]);

    expect(await resultText(owner.accessToken, queryId)).toContain('\n4294967296,\n2147483648,""\n');
    expect(expected.map((row) => row[0])).toContain(-4294967297n);
    expect((await parquetOf(queryId)).rows).toEqual(expected);
    expect((await arrowOf(queryId)).rows).toEqual(expected);
    const lines = new TextDecoder()
      .decode((await download(queryId, "ndjson")).bytes)
      .trimEnd()
      .split("\n");
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual(
      expected.map(([n, t]) => ({
        n: typeof n === "bigint" && Number.isSafeInteger(Number(n)) ? Number(n) : n === null ? null : String(n),
        t,
      })),
    );
  });

  it.each([
    ["csv", "text/csv; charset=utf-8", "csv"],
    ["ndjson", "application/x-ndjson", "ndjson"],
    ["parquet", "application/vnd.apache.parquet", "parquet"],
    ["arrow", "application/vnd.apache.arrow.file", "arrow"],
  ])("should redirect format=%s to a signed URL of a %s file named after the query", async (format, type, ext) => {
    const { response } = await download(typed, format);

    expect(response.headers.get("content-type")).toBe(type);
    // After the time it was submitted (query/result/download-name.ts), with the format's own extension.
    expect(response.headers.get("content-disposition")).toMatch(
      new RegExp(`^attachment; filename="query-\\d{4}-\\d\\d-\\d\\d-\\d{6}\\.${ext}"`),
    );
  });

  it("should answer the CSV itself for format=csv, as without a format", async () => {
    expect(new TextDecoder().decode((await download(typed, "csv")).bytes)).toBe(
      await resultText(owner.accessToken, typed),
    );
  });

  it("should make a format once and keep it for later requests", async () => {
    const queryId = await finishedQuery("SELECT 1 AS one");
    const writes: string[] = [];
    const bucket = new Proxy(env.BUCKET, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (property === "put" || property === "createMultipartUpload") writes.push(args[0] as string);
          return (value as (...args: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const via = workerWith({ BUCKET: bucket });

    expect((await rawdata(queryId, "parquet", via)).status).toBe(302);
    expect((await rawdata(queryId, "parquet", via)).status).toBe(302);

    const parquet = resultFormatKey(await resultObjectKey(queryId), "parquet");
    expect(writes).toEqual([parquet]);
    expect(await env.BUCKET.head(parquet)).not.toBeNull();
  });

  it("should refuse a format it does not know, naming the ones it does", async () => {
    const body = await readEnvelope(await rawdata(typed, "xlsx"), 400);

    expect(body.Status.Message).toMatch(/^Invalid request: query format: .*"csv".*"ndjson".*"parquet".*"arrow"/);
  });

  it("should answer a query still running as the CSV does", async () => {
    const queryId = await submitOk(owner.accessToken, "SELECT 1", serviceWith(new TestQueue()));

    const body = await readEnvelope(await rawdata(queryId, "parquet"), 400);
    const csv = await readEnvelope(await queryGet(owner.accessToken, queryId, "results/rawdata"), 400);

    expect(body.Status.Message).toBe(csv.Status.Message);
  });

  it("should give BOOLEAN, DATE and TIMESTAMP columns their types: Parquet BOOLEAN and DATE, Arrow Bool and Date32, timestamps as their stored text", async () => {
    const dataset = `formats_${crypto.randomUUID().replace(/-/g, "").slice(0, 8)}`;
    await seedDataset(owner.accessToken, owner.accountName, dataset, {
      kinds: {
        columns: [
          ["n", "INTEGER"],
          ["flag", "BOOLEAN"],
          ["day", "DATE"],
          ["at", "TIMESTAMP"],
        ],
        csv: "n,flag,day,at\n1,true,2024-01-02,2024-01-02T03:04:05Z\n2,0,0099-12-31,2024-01-02 03:04\n3,,,\n",
      },
    });
    const queryId = await finishedQuery(`SELECT flag, day, at FROM ${owner.accountName}.${dataset}.kinds ORDER BY n`);

    const rows = await readEnvelope<{ Columns: { DataType: string }[]; Rows: unknown[][] }>(
      await call(`/v1/query/${queryId}/results/rows`, { headers: authHeader(owner.accessToken) }),
      200,
    );
    const parquet = await parquetOf(queryId);
    const arrow = await arrowOf(queryId);

    expect(rows.Data.Columns.map((column) => column.DataType)).toEqual(["BOOLEAN", "DATE", "TIMESTAMP"]);
    expect(rows.Data.Rows).toEqual([
      [true, "2024-01-02", "2024-01-02 03:04:05"],
      [false, "0099-12-31", "2024-01-02 03:04:00"],
      [null, null, null],
    ]);
    expect(parquet.columns).toEqual([
      { name: "flag", type: "BOOLEAN", converted: undefined, repetition: "OPTIONAL" },
      { name: "day", type: "INT32", converted: "DATE", repetition: "OPTIONAL" },
      { name: "at", type: "BYTE_ARRAY", converted: "UTF8", repetition: "OPTIONAL" },
    ]);
    const day = (text: string) => new Date(`${text}T00:00:00Z`);
    expect(parquet.rows).toEqual([
      [true, day("2024-01-02"), "2024-01-02 03:04:05"],
      [false, day("0099-12-31"), "2024-01-02 03:04:00"],
      [null, null, null],
    ]);
    expect(arrow.fields.map((field) => field.type)).toEqual(["Bool", "Date32<DAY>", "Utf8"]);
    expect(arrow.rows).toEqual([
      [true, day("2024-01-02").getTime(), "2024-01-02 03:04:05"],
      [false, day("0099-12-31").getTime(), "2024-01-02 03:04:00"],
      [null, null, null],
    ]);
  });

  it("should write typed files for an empty result", async () => {
    const queryId = await finishedQuery("SELECT 1 AS one, 2.5 AS two WHERE 0");

    const parquet = await parquetOf(queryId);
    const arrow = await arrowOf(queryId);
    const ndjson = (await download(queryId, "ndjson")).bytes;

    expect(parquet.rows).toEqual([]);
    expect(parquet.columns.map((column) => column.name)).toEqual(["one", "two"]);
    expect(arrow.rows).toEqual([]);
    expect(arrow.fields.map((field) => field.name)).toEqual(["one", "two"]);
    expect(ndjson.byteLength).toBe(0);
  });

  it("should write a result of several batches: row groups and record batches, with every row", async () => {
    const queryId = await finishedQuery(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 210000)
       SELECT i, i * 0.5 AS half, 'row ' || i AS label FROM n`,
    );
    const expected = await csvValues(queryId, ["INTEGER", "DOUBLE", "STRING"]);

    const parquet = await parquetOf(queryId);
    const arrow = await arrowOf(queryId);

    expect(expected).toHaveLength(210000);
    expect(parquet.metadata.row_groups.length).toBeGreaterThan(1);
    expect(parquet.rows).toEqual(expected);
    expect(arrow.table.batches.length).toBeGreaterThan(1);
    expect(arrow.rows).toEqual(expected);
  }, 60_000);
});
