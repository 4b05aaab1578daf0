import { tableFromIPC } from "apache-arrow";
import { beforeAll, describe, expect, it } from "vitest";
import type { DqsClient, ResultRowsPage } from "../../src/sdk";
import { loggedInClient, recordingFetch, type Sent } from "./support";

let client: DqsClient;
let sent: Sent[];

beforeAll(async () => {
  const recording = recordingFetch();
  sent = recording.sent;
  client = (await loggedInClient("sdk-r", { fetch: recording.fetch })).client;
});

/** `count` rows made by SQL alone: i from 1, and a 64-bit value beyond 2^53. */
function numbersSql(count: number): string {
  return `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
    SELECT i, 'row ' || i AS label, 9007199254740993 + i AS big FROM n`;
}

function numberRow(i: number) {
  return { i, label: `row ${i}`, big: 9007199254740993n + BigInt(i) };
}

describe("query() through the pages of the rows endpoint", () => {
  it("should return every row of a result of several pages, typed, without downloading the CSV", async () => {
    const before = sent.length;

    const result = await client.query(numbersSql(12_345), { wait: 60 });

    expect(result.columns).toEqual([
      { name: "i", type: "INTEGER" },
      { name: "label", type: "STRING" },
      { name: "big", type: "INTEGER" },
    ]);
    expect(result.rows).toHaveLength(12_345);
    expect(result.rows).toEqual(Array.from({ length: 12_345 }, (_, r) => numberRow(r + 1)));
    const paths = sent.slice(before).map((request) => request.path);
    expect(paths.filter((path) => path.endsWith("/results/rows")).length).toBeGreaterThanOrEqual(2);
    expect(paths.some((path) => path.endsWith("/results/rawdata") || path.endsWith("/metadata/schema"))).toBe(false);
  });

  it("should take a small result from the submit itself, with no request for its rows", async () => {
    const submitted = await client.submitQuery("SELECT 1 AS one, NULL AS none", { waitSeconds: 20 });
    const before = sent.length;

    const result = await client.queryRows(submitted.queryId, { first: submitted.firstPage });

    expect(submitted.state).toBe("succeeded");
    expect(submitted.firstPage?.NextCursor).toBeNull();
    expect(result.rows).toEqual([{ one: 1, none: null }]);
    expect(sent.length).toBe(before);
  });
});

describe("resultPages()", () => {
  it("should walk the pages with the limit asked for, each NextCursor leading to the next", async () => {
    const { status } = await client.query(numbersSql(2500), { as: "stream" });

    const pages: ResultRowsPage[] = [];
    for await (const page of client.resultPages(status.QueryId, { limit: 1000 })) pages.push(page);

    expect(pages.map((page) => page.Rows.length)).toEqual([1000, 1000, 500]);
    expect(pages.map((page) => page.NextCursor === null)).toEqual([false, false, true]);
    expect(pages[1]!.Rows[0]).toEqual([1001, "row 1001", "9007199254741994"]);
  });
});

describe("queryResult() in a format", () => {
  let queryId: string;

  beforeAll(async () => {
    queryId = (await client.query(numbersSql(3), { as: "stream" })).queryId;
  });

  async function bytesOf(format: "csv" | "ndjson" | "parquet" | "arrow"): Promise<Uint8Array> {
    return new Uint8Array(await new Response((await client.queryResult(queryId, format)).body).arrayBuffer());
  }

  it("should download Parquet, Arrow and NDJSON", async () => {
    const parquet = await bytesOf("parquet");
    const arrow = tableFromIPC(await bytesOf("arrow"));
    const ndjson = new TextDecoder().decode(await bytesOf("ndjson"));

    expect(new TextDecoder().decode(parquet.slice(0, 4))).toBe("PAR1");
    expect(new TextDecoder().decode(parquet.slice(-4))).toBe("PAR1");
    expect(arrow.toArray().map((row) => (row as { big: bigint }).big)).toEqual([
      9007199254740994n,
      9007199254740995n,
      9007199254740996n,
    ]);
    expect(ndjson.split("\n")[0]).toBe('{"i":1,"label":"row 1","big":"9007199254740994"}');
  });

  it("should stream a query's result in the format asked for", async () => {
    const result = await client.query(numbersSql(2), { as: "stream", format: "ndjson" });

    expect(result.filename).toMatch(/^query-\d{4}-\d\d-\d\d-\d{6}\.ndjson$/);
    expect(await new Response(result.body).text()).toBe(
      '{"i":1,"label":"row 1","big":"9007199254740994"}\n{"i":2,"label":"row 2","big":"9007199254740995"}\n',
    );
  });
});
