import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { recordResultDeleted } from "../../src/worker/query/history";
import { resultIndexKey, resultObjectKey } from "../../src/worker/storage/keys";
import { call, readEnvelope, workerWith, type Fetch } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  cancelQuery,
  consume,
  queryGet,
  resultText,
  serviceWith,
  stateOf,
  submit,
  submitOk,
  TestQueue,
} from "../support/query";

type Value = string | number | null;

interface RowsData {
  Columns: { Name: string; DataType: string }[];
  Rows: Value[][];
  RowCount: number;
  NextCursor: string | null;
}

let owner: LoggedIn;
let stranger: LoggedIn;

beforeAll(async () => {
  owner = await login("q_rows");
  stranger = await login("q_rows_stranger");
});

/** `count` rows: i from 1, a label and a half, made by SQL alone. */
function numbersSql(count: number): string {
  return `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
    SELECT i, 'row ' || i AS label, i * 0.5 AS half FROM n`;
}

function numberRow(i: number): Value[] {
  return [i, `row ${i}`, i * 0.5];
}

async function queuedQuery(sql: string): Promise<string> {
  return submitOk(owner.accessToken, sql, serviceWith(new TestQueue()));
}

async function finishedQuery(sql: string): Promise<string> {
  const queryId = await queuedQuery(sql);
  await consume([queryId]);
  return queryId;
}

function getRows(queryId: string, query: Record<string, string> = {}, via?: Fetch, token = owner.accessToken) {
  const search = new URLSearchParams(query).toString();
  return call(`/v1/query/${queryId}/results/rows${search ? `?${search}` : ""}`, { headers: authHeader(token) }, via);
}

async function page(queryId: string, query: Record<string, string> = {}, via?: Fetch): Promise<RowsData> {
  return (await readEnvelope<RowsData>(await getRows(queryId, query, via), 200)).Data;
}

/** Every page of a result, following NextCursor. */
async function allPages(queryId: string, limit: string): Promise<RowsData[]> {
  const pages = [await page(queryId, { limit })];
  while (pages.at(-1)!.NextCursor) pages.push(await page(queryId, { limit, cursor: pages.at(-1)!.NextCursor! }));
  return pages;
}

async function errorOf(response: Response, status: number): Promise<string> {
  return (await readEnvelope(response, status)).Status.Message;
}

/** The bucket, recording each get: the key and the byte range asked for. */
function recordingBucket(gets: { key: string; range?: R2Range }[]): R2Bucket {
  return new Proxy(env.BUCKET, {
    get(target, property) {
      if (property === "get")
        return (key: string, options?: R2GetOptions) => {
          gets.push({ key, range: options?.range as R2Range | undefined });
          return target.get(key, options);
        };
      const value = Reflect.get(target, property) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe("GET /v1/query/{QueryId}/results/rows", () => {
  let numbers: string;

  beforeAll(async () => {
    numbers = await finishedQuery(numbersSql(2500));
  });

  it("should give the first, a middle and the last page, typed by the result's columns", async () => {
    const first = await page(numbers);
    const middle = await page(numbers, { cursor: first.NextCursor! });
    const last = await page(numbers, { cursor: middle.NextCursor! });

    expect(first.Columns).toEqual([
      { Name: "i", DataType: "INTEGER" },
      { Name: "label", DataType: "STRING" },
      { Name: "half", DataType: "DOUBLE" },
    ]);
    expect([first.RowCount, middle.RowCount, last.RowCount]).toEqual([2500, 2500, 2500]);
    expect(first.Rows).toEqual(Array.from({ length: 1000 }, (_, r) => numberRow(r + 1)));
    expect(middle.Rows).toEqual(Array.from({ length: 1000 }, (_, r) => numberRow(r + 1001)));
    expect(last.Rows).toEqual(Array.from({ length: 500 }, (_, r) => numberRow(r + 2001)));
    expect(first.NextCursor).toEqual(expect.any(String));
    expect(middle.NextCursor).toEqual(expect.any(String));
    expect(last.NextCursor).toBeNull();
  });

  it("should read a page deep in the result as a byte range of the CSV, never from its start", async () => {
    const csv = new TextEncoder().encode(await resultText(owner.accessToken, numbers));
    // Row 2001 is the 2,002nd line: after the header and 2,000 rows.
    let row2001 = 0;
    for (let lines = 0; lines < 2001; row2001++) if (csv[row2001] === 0x0a) lines++;
    const second = await page(numbers, { cursor: (await page(numbers)).NextCursor! });
    const gets: { key: string; range?: R2Range }[] = [];

    const last = await page(numbers, { cursor: second.NextCursor! }, workerWith({ BUCKET: recordingBucket(gets) }));

    expect(last.Rows[0]).toEqual(numberRow(2001));
    const csvKey = await resultObjectKey(numbers);
    const csvReads = gets.filter((get) => get.key === csvKey);
    expect(csvReads.length).toBeGreaterThan(0);
    expect(csvReads[0]!.range).toMatchObject({ offset: row2001 });
    expect(csvReads.every((read) => read.range && "offset" in read.range && read.range.offset! >= row2001)).toBe(true);
    expect(gets.filter((get) => get.key === resultIndexKey(csvKey))).toEqual([
      { key: resultIndexKey(csvKey), range: { offset: 16, length: 8 } },
    ]);
  });

  it("should walk the whole result with a limit that does not fall on the row index", async () => {
    const pages = await allPages(numbers, "700");

    expect(pages.map((p) => p.Rows.length)).toEqual([700, 700, 700, 400]);
    expect(pages.flatMap((p) => p.Rows)).toEqual(Array.from({ length: 2500 }, (_, r) => numberRow(r + 1)));
  });

  it("should take limit=1 and limit=10000", async () => {
    const one = await page(numbers, { limit: "1" });
    const next = await page(numbers, { limit: "1", cursor: one.NextCursor! });
    const most = await page(numbers, { limit: "10000" });

    expect([one.Rows, next.Rows]).toEqual([[numberRow(1)], [numberRow(2)]]);
    expect(most.Rows).toHaveLength(2500);
    expect(most.NextCursor).toBeNull();
  });

  it.each(["0", "10001", "-1", "1.5", "ten"])("should refuse limit=%s naming the limit", async (limit) => {
    const message = await errorOf(await getRows(numbers, { limit }), 400);

    expect(message).toMatch(/^Invalid request: query limit: /);
  });

  it("should end a page of very wide rows early, and go on from there with its cursor", async () => {
    // Twelve rows of 1 MiB each: a page stops once it has read 8 MiB.
    const queryId = await finishedQuery(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12) SELECT i, hex(zeroblob(524288)) AS wide FROM n",
    );

    const pages = await allPages(queryId, "1000");

    expect(pages.length).toBeGreaterThan(1);
    expect(pages.every((p) => p.Rows.length >= 1 && p.Rows.length <= 9)).toBe(true);
    // The rows skipped to reach a later page's first row do not count against it: no page of one row but the last.
    expect(pages.slice(0, -1).every((p) => p.Rows.length >= 6)).toBe(true);
    expect(pages.flatMap((p) => p.Rows.map((row) => [row[0], (row[1] as string).length]))).toEqual(
      Array.from({ length: 12 }, (_, r) => [r + 1, 1048576]),
    );
  });

  it("should answer 400 naming the limit for a result with a row too long for rows and formats, which the CSV has whole", async () => {
    const queryId = await finishedQuery("SELECT 1 AS i, hex(zeroblob(4200000)) AS h UNION ALL SELECT 2, 'x'");
    const expected = `The result of query ${queryId} has a row longer than 8388608 characters, which cannot be served`;

    const rows = await errorOf(await getRows(queryId), 400);
    const ndjson = await errorOf(
      await call(`/v1/query/${queryId}/results/rawdata?format=ndjson`, { headers: authHeader(owner.accessToken) }),
      400,
    );
    const csv = await call(`/v1/query/${queryId}/results/rawdata`, { headers: authHeader(owner.accessToken) });

    expect(rows).toBe(`${expected} as rows; download it with results/rawdata (CSV) instead.`);
    expect(ndjson).toBe(`${expected} as ndjson; download it with results/rawdata (CSV) instead.`);
    expect(csv.status).toBe(302);
  });

  it("should type 64-bit integers beyond 2^53 as exact strings and NULL as null", async () => {
    const queryId = await finishedQuery(`SELECT * FROM (VALUES
      (9223372036854775807, 1.5, 'x', NULL, 1),
      (9007199254740991, -2.0, 'a,"b"' || char(10) || 'c', NULL, 'one'),
      (-9007199254740993, 1e300, '', NULL, 2.5),
      (NULL, NULL, NULL, NULL, NULL))`);

    const data = await page(queryId);

    expect(data.Columns.map((column) => column.DataType)).toEqual(["INTEGER", "DOUBLE", "STRING", "STRING", "STRING"]);
    expect(data.Rows).toEqual([
      ["9223372036854775807", 1.5, "x", null, "1"],
      [9007199254740991, -2, 'a,"b"\nc', null, "one"],
      // The result CSV writes the empty string "" and NULL an empty field: they read back apart.
      ["-9007199254740993", 1e300, "", null, "2.5"],
      [null, null, null, null, null],
    ]);
  });

  it("should give the rows of a one-column result whose NULLs are empty lines", async () => {
    const queryId = await finishedQuery("SELECT NULL AS x UNION ALL SELECT 2 UNION ALL SELECT NULL");

    expect((await page(queryId)).Rows).toEqual([[null], [2], [null]]);
  });

  it('should tell a one-column result\'s empty strings ("" lines) from its NULLs (empty lines)', async () => {
    const queryId = await finishedQuery(
      "SELECT '' AS x UNION ALL SELECT NULL UNION ALL SELECT 'a' UNION ALL SELECT ''",
    );

    expect(await resultText(owner.accessToken, queryId)).toBe('x\n""\n\na\n""\n');
    expect((await page(queryId)).Rows).toEqual([[""], [null], ["a"], [""]]);
  });

  it("should answer an empty result with its columns, no rows and no cursor", async () => {
    const queryId = await finishedQuery("SELECT 1 AS one, 'a' AS two WHERE 0");

    expect(await page(queryId)).toEqual({
      Columns: [
        { Name: "one", DataType: "STRING" },
        { Name: "two", DataType: "STRING" },
      ],
      Rows: [],
      RowCount: 0,
      NextCursor: null,
    });
  });

  describe("cursors", () => {
    const refusal = (queryId: string) =>
      `cursor is not one this service handed out for query ${queryId}; pass NextCursor from its previous page, or no cursor for the first page.`;

    it("should refuse a cursor whose signature or row was changed", async () => {
      const cursor = (await page(numbers)).NextCursor!;
      const [row, signature] = cursor.split(".") as [string, string];
      const flipped = signature.slice(0, 10) + (signature[10] === "A" ? "B" : "A") + signature.slice(11);
      const otherRow = btoa("2000").replace(/=+$/, "");

      for (const forged of [`${row}.${flipped}`, `${otherRow}.${signature}`, `${row}`, `${cursor}.x`, "garbage", ""])
        expect(await errorOf(await getRows(numbers, { cursor: forged }), 400), forged).toBe(refusal(numbers));
    });

    it("should refuse another query's cursor", async () => {
      const other = await finishedQuery(numbersSql(1500));
      const cursor = (await page(other)).NextCursor!;

      expect(await errorOf(await getRows(numbers, { cursor }), 400)).toBe(refusal(numbers));
      expect((await page(other, { cursor })).Rows[0]).toEqual(numberRow(1001));
    });
  });

  describe("states", () => {
    async function sameAnswer(queryId: string, status: number): Promise<string> {
      const rows = await errorOf(await getRows(queryId), status);
      expect(await errorOf(await queryGet(owner.accessToken, queryId, "results/rawdata"), status)).toBe(rows);
      return rows;
    }

    it("should answer a queued or running query as results/rawdata does", async () => {
      const queryId = await queuedQuery("SELECT 1");

      expect(await sameAnswer(queryId, 400)).toMatch(/still running \(queued\)/);
      await stateOf(queryId).claim();
      expect(await sameAnswer(queryId, 400)).toMatch(/still running \(running\)/);
    });

    it("should answer a failed or cancelled query as results/rawdata does", async () => {
      const failed = await finishedQuery("SELECT * FROM nobody.nothing.none");
      const cancelled = await queuedQuery("SELECT 1");
      await cancelQuery(owner.accessToken, cancelled);

      expect(await sameAnswer(failed, 400)).toMatch(/has no result: it failed\. Failed: /);
      expect(await sameAnswer(cancelled, 400)).toMatch(/has no result: it cancelled\./);
    });

    it("should answer 410 once the result has expired", async () => {
      const queryId = await finishedQuery("SELECT 1");
      // As the cron records a deleted result.
      await recordResultDeleted(env.DB, queryId, new Date().toISOString().slice(0, 19) + "Z");

      expect(await sameAnswer(queryId, 410)).toMatch(/expired at .* and was deleted; run the query again\.$/);
    });

    it("should answer 404 for someone else's query", async () => {
      const message = await errorOf(await getRows(numbers, {}, undefined, stranger.accessToken), 404);

      expect(message).toBe(`Query ${numbers} not found, or it is not yours.`);
    });
  });
});

describe("POST /v1/query with Prefer: wait", () => {
  it("should add the state and the first page of rows once the query has succeeded", async () => {
    const queue = new TestQueue({});

    const response = await submit(owner.accessToken, { Sql: numbersSql(1200) }, serviceWith(queue), {
      prefer: "wait=10",
    });

    const body = await readEnvelope<{ QueryId: string; Status: string; FirstPage: RowsData }>(response, 200);
    await queue.settled();
    expect(body.Data.Status).toBe("succeeded");
    expect(body.Data.FirstPage).toEqual(await page(body.Data.QueryId));
    expect(body.Data.FirstPage.Rows).toHaveLength(1000);
    expect((await page(body.Data.QueryId, { cursor: body.Data.FirstPage.NextCursor! })).Rows[0]).toEqual(
      numberRow(1001),
    );
  });

  it("should add only the state while the query has not ended", async () => {
    const response = await submit(owner.accessToken, { Sql: "SELECT 1" }, serviceWith(new TestQueue()), {
      prefer: "wait=1",
    });

    const body = await readEnvelope<Record<string, unknown>>(response, 200);
    expect(Object.keys(body.Data)).toEqual(["QueryId", "Status"]);
    expect(body.Data.Status).toBe("queued");
  });

  it("should not wait for a wait that is not whole seconds", async () => {
    for (const prefer of ["wait=1e3", "wait=1.5", "wait=-1", "wait=x"]) {
      const response = await submit(owner.accessToken, { Sql: "SELECT 1" }, serviceWith(new TestQueue()), { prefer });

      expect([prefer, response.headers.get("preference-applied")]).toEqual([prefer, null]);
      expect(Object.keys((await readEnvelope<Record<string, unknown>>(response, 200)).Data)).toEqual(["QueryId"]);
    }
  });

  it("should answer with the QueryId alone without Prefer: wait", async () => {
    const body = await readEnvelope<Record<string, unknown>>(
      await submit(owner.accessToken, { Sql: "SELECT 1" }, serviceWith(new TestQueue())),
      200,
    );

    expect(Object.keys(body.Data)).toEqual(["QueryId"]);
  });
});
