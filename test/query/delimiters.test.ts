import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { DataStorage } from "../../src/sdk";
import { schemaOf, upload } from "../support/catalog";
import { call, readEnvelope } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  deliver,
  newQueuedItem,
  outcomeOf,
  runSql,
  serviceWith,
  TestQueue,
  type QueryStatusData,
  type QueuedItem,
} from "../support/query";

// A file that is not comma-separated, uploaded without a schema: the
// delimiter is detected, written into the stored schema, and every later
// reader of the stored file (sql.js loading the CSV, a column-image build,
// a table-store fill) reads it with that delimiter.

const ROWS = Array.from({ length: 12 }, (_, i) => [
  String(i + 1),
  i % 2 ? `name ${i}` : `Smith, J; ${i}`,
  i % 3 ? `${i}.5` : "",
  `2024-03-${String(i + 1).padStart(2, "0")}`,
]);
/** The rows as a query returns them (RFC 4180 quoting, comma-separated). */
const EXPECTED_CSV =
  "id,name,amount,day\n" +
  ROWS.map(([id, name, amount, day]) => [id, name!.includes(",") ? `"${name}"` : name, amount, day].join(",")).join(
    "\n",
  ) +
  "\n";

function fileWith(delimiter: string): string {
  const quote = (field: string) => (field.includes(delimiter) ? `"${field}"` : field);
  return ["id,name,amount,day".replace(/,/g, delimiter), ...ROWS.map((row) => row.map(quote).join(delimiter))]
    .map((line) => `${line}\r\n`)
    .join("");
}

/** How the query reads the item: its CSV in sql.js, its column images in sql.js, or its table store. */
const READERS: Record<string, { settings: Partial<Env>; build: boolean; engine: string }> = {
  csv: { settings: { COLUMN_IMAGES: "off" }, build: false, engine: "sqljs" },
  images: { settings: { COLUMN_IMAGES: "build" }, build: true, engine: "sqljs" },
  store: { settings: { COLUMN_IMAGES: "build", TABLE_STORE_MIN_ROWS: "10" }, build: true, engine: "store" },
};

let owner: LoggedIn;

beforeAll(async () => {
  owner = await login("delim");
});

beforeEach(() => {
  vi.spyOn(console, "log").mockImplementation(() => undefined);
  vi.spyOn(console, "error").mockImplementation(() => undefined);
});

afterEach(() => {
  vi.restoreAllMocks();
});

async function uploadItem(csv: string, settings: Partial<Env>): Promise<{ item: QueuedItem; message: string }> {
  let message = "";
  const item = await newQueuedItem(owner, "delim", "items.csv", async (path) => {
    const queue = new TestQueue();
    const response = await upload(owner.accessToken, path, csv, {}, "items.csv", serviceWith(queue, settings));
    message = (await readEnvelope(response, 200)).Status.Message;
    return queue;
  });
  return { item, message };
}

async function storageOf(item: QueuedItem): Promise<DataStorage> {
  const response = await call(`/v1/data/${item.path}/metadata/storage`, { headers: authHeader(owner.accessToken) });
  return (await readEnvelope<DataStorage>(response, 200)).Data;
}

describe("a file separated by something other than commas", () => {
  for (const [name, delimiter] of [
    ["semicolons", ";"],
    ["tabs", "\t"],
  ] as const) {
    for (const [reader, { settings, build, engine }] of Object.entries(READERS)) {
      it(`should be read by its detected delimiter (${name}), from upload to a query over its ${reader}`, async () => {
        const { item, message } = await uploadItem(fileWith(delimiter), settings);
        expect(message).toContain(`12 rows, 4 columns (delimiter ${JSON.stringify(delimiter)})`);
        const schema = await schemaOf(owner.accessToken, item.path);
        expect(schema.DataSpecification.DataOptions).toEqual({ Header: true, Delimiter: delimiter });
        expect(schema.TableDefinition.Columns.map((c) => `${c.Name}:${c.DataType.DataType}`)).toEqual([
          "id:INTEGER",
          "name:STRING",
          "amount:DOUBLE",
          "day:DATE",
        ]);
        if (build) {
          expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });
          expect((await storageOf(item)).QueryReady).toBe(true);
        }

        const run = await runSql(owner.accessToken, `SELECT id, name, amount, day FROM ${item.table} ORDER BY id`);

        expect(run.status.Status, run.status.Message).toBe("succeeded");
        expect((run.status as QueryStatusData & { Engine?: string }).Engine).toBe(engine);
        expect(run.csv).toBe(EXPECTED_CSV);
      });
    }
  }
});
