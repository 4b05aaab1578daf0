import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { schemaOf, upload } from "../support/catalog";
import { call, readEnvelope } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  deliver,
  newQueuedItem,
  outcomeOf,
  resultText,
  runSql,
  serviceWith,
  statusOf,
  submit,
  TestQueue,
  type QueryStatusData,
  type QueuedItem,
} from "../support/query";

// How values are stored and given back, from upload to result, through
// every reader of a data item: its CSV in sql.js, its column images, and a
// table store. TIMESTAMP is stored as SQLite writes it (a space, in UTC), so
// literals written that way and SQLite's date functions compare with it; an
// unquoted empty field is NULL and a quoted "" the empty string (in a STRING
// column), and the result CSV and JSON rows keep the two apart.

const FILE =
  [
    "id,at,name,n",
    '1,2001-01-02 00:00:00,"",1',
    "2,2001-01-02T23:59:59Z,,",
    // 20:30 at UTC-5 is 01:30 the next day in UTC.
    '3,2001-01-02T20:30:00-05:00,x,""',
    '4,2001-01-01 23:59:59.500,"a ""b""",4',
    "5,,y,5",
  ].join("\r\n") + "\r\n";

/** How the query reads the item: its CSV in sql.js, its column images in sql.js, or its table store. */
const READERS: Record<string, { settings: Partial<Env>; build: boolean; engine: string }> = {
  csv: { settings: { COLUMN_IMAGES: "off" }, build: false, engine: "sqljs" },
  images: { settings: { COLUMN_IMAGES: "build" }, build: true, engine: "sqljs" },
  store: { settings: { COLUMN_IMAGES: "build", TABLE_STORE_MIN_ROWS: "3" }, build: true, engine: "store" },
};

let owner: LoggedIn;

beforeAll(async () => {
  owner = await login("forms");
});

beforeEach(() => {
  vi.spyOn(console, "log").mockImplementation(() => undefined);
  vi.spyOn(console, "error").mockImplementation(() => undefined);
});

afterEach(() => {
  vi.restoreAllMocks();
});

async function uploadItem(settings: Partial<Env>): Promise<{ item: QueuedItem; message: string }> {
  let message = "";
  const item = await newQueuedItem(owner, "forms", "events.csv", async (path) => {
    const queue = new TestQueue();
    const response = await upload(owner.accessToken, path, FILE, {}, "events.csv", serviceWith(queue, settings));
    message = (await readEnvelope(response, 200)).Status.Message;
    return queue;
  });
  return { item, message };
}

/** Runs SQL that must succeed in `engine`; returns its id and result CSV. */
async function ran(sql: string, engine: string): Promise<{ queryId: string; csv: string }> {
  const run = await runSql(owner.accessToken, sql);
  expect(run.status.Status, run.status.Message).toBe("succeeded");
  expect((run.status as QueryStatusData & { Engine?: string }).Engine).toBe(engine);
  return { queryId: run.queryId, csv: run.csv ?? "" };
}

async function jsonRows(queryId: string): Promise<unknown[][]> {
  const response = await call(`/v1/query/${queryId}/results/rows`, { headers: authHeader(owner.accessToken) });
  return (await readEnvelope<{ Rows: unknown[][] }>(response, 200)).Data.Rows;
}

describe("values from a file to a result", () => {
  for (const [reader, { settings, build, engine }] of Object.entries(READERS)) {
    it(`should store timestamps as SQLite writes them and keep "" apart from NULL, reading the item's ${reader}`, async () => {
      const { item, message } = await uploadItem(settings);
      expect(message).toContain("TIMESTAMP values (at) are stored in UTC as YYYY-MM-DD HH:MM:SS[.fff].");
      const schema = await schemaOf(owner.accessToken, item.path);
      expect(schema.TableDefinition.Columns.map((c) => [c.Name, c.DataType.DataType])).toEqual([
        ["id", "INTEGER"],
        ["at", "TIMESTAMP"],
        ["name", "STRING"],
        ["n", "INTEGER"],
      ]);
      if (build) {
        expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });
        const storage = await call(`/v1/data/${item.path}/metadata/storage`, {
          headers: authHeader(owner.accessToken),
        });
        expect((await readEnvelope<{ QueryReady: boolean }>(storage, 200)).Data.QueryReady).toBe(true);
      }

      const day = await ran(
        `SELECT id, at FROM ${item.table} WHERE at BETWEEN '2001-01-02 00:00:00' AND '2001-01-02 23:59:59' ORDER BY id`,
        engine,
      );
      expect(day.csv).toBe("id,at\n1,2001-01-02 00:00:00\n2,2001-01-02 23:59:59\n");

      const compared = await ran(
        `SELECT id, at > datetime('2001-01-02 23:00:00') AS late, at < datetime('2001-01-02') AS early, at
         FROM ${item.table} ORDER BY at, id`,
        engine,
      );
      expect(compared.csv).toBe(
        "id,late,early,at\n5,,,\n4,0,1,2001-01-01 23:59:59.5\n1,0,0,2001-01-02 00:00:00\n" +
          "2,1,0,2001-01-02 23:59:59\n3,1,0,2001-01-03 01:30:00\n",
      );

      const namesSql = `SELECT id, name, name IS NULL AS missing, length(name) AS len, n FROM ${item.table} ORDER BY id`;
      const names = await ran(namesSql, engine);
      expect(names.csv).toBe('id,name,missing,len,n\n1,"",0,0,1\n2,,1,,\n3,x,0,1,\n4,"a ""b""",0,5,4\n5,y,0,1,5\n');
      expect(await jsonRows(names.queryId)).toEqual([
        [1, "", 0, 0, 1],
        [2, null, 1, null, null],
        [3, "x", 0, 1, null],
        [4, 'a "b"', 0, 5, 4],
        [5, "y", 0, 1, 5],
      ]);

      // The same query again answers from the kept result, which keeps the difference too.
      const again = await readEnvelope<{ QueryId: string }>(
        await submit(owner.accessToken, { Sql: namesSql }, serviceWith(new TestQueue())),
        200,
      );
      expect((await statusOf(owner.accessToken, again.Data.QueryId)).Reused).toBe(true);
      expect(await resultText(owner.accessToken, again.Data.QueryId)).toBe(names.csv);
      expect((await jsonRows(again.Data.QueryId))[0]).toEqual([1, "", 0, 0, 1]);
    });
  }

  it('should write SELECT \'\' as "" and NULL as an empty field, and give them as "" and null in JSON rows', async () => {
    const literal = await ran("SELECT '' AS empty, NULL AS missing, 'x' AS x", "sqljs");

    expect(literal.csv).toBe('empty,missing,x\n"",,x\n');
    expect(await jsonRows(literal.queryId)).toEqual([["", null, "x"]]);
  });
});
