import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { ORPHAN_GRACE_SECONDS } from "../../src/worker/catalog/datasets";
import { settings } from "../../src/worker/config";
import type { DataStorage } from "../../src/sdk";
import { runMaintenance } from "../../src/worker/maintenance/scheduled";
import type { ColumnImages } from "../../src/worker/query/engine/column-images";
import { requestMissingPreparation, type PrepareMessage } from "../../src/worker/query/prepare-item";
import {
  createDataset,
  dataItemRow,
  datasetId,
  gzip,
  grant,
  objectKeys,
  orphansUnder,
  upload,
  uniqueName,
} from "../support/catalog";
import { call, readEnvelope } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  bareName,
  deliver,
  eventually,
  newQueuedItem,
  outcomeOf,
  runSql,
  serviceWith,
  TestQueue,
  type QueuedItem,
} from "../support/query";

// The column images of a data item, end to end in the Worker: the upload asks
// the queue (a TestQueue, so the test decides when the consumer runs), the
// real consumer builds and records them, queries read them, and replacing or
// deleting the data lists them for the sweep.

const CSV =
  "id,category,amount\n" + Array.from({ length: 37 }, (_, i) => `${i + 1},c${i % 3},${i}.5`).join("\n") + "\n";
const REPLACEMENT = "id,category,amount\n1,x,2.5\n";
const IMAGES_ON: Partial<Env> = { COLUMN_IMAGES: "build" };

let owner: LoggedIn;
let logged: MockInstance<typeof console.log>;

beforeAll(async () => {
  owner = await login(uniqueName("imager"));
});

beforeEach(() => {
  logged = vi.spyOn(console, "log").mockImplementation(() => undefined);
  vi.spyOn(console, "error").mockImplementation(() => undefined);
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Uploads with column images on, through a queue of its own; returns that queue. */
async function uploadWithImages(path: string, csv: string | Uint8Array<ArrayBuffer> = CSV): Promise<TestQueue> {
  const queue = new TestQueue();
  await readEnvelope(await upload(owner.accessToken, path, csv, {}, "sales.csv", serviceWith(queue, IMAGES_ON)), 200);
  return queue;
}

/** A new dataset of the owner with one data item uploaded with column images on (not built yet). */
type Item = QueuedItem;

async function newItem(csv: string | Uint8Array<ArrayBuffer> = CSV, data = "sales"): Promise<Item> {
  return newQueuedItem(owner, "img", data, (path) => uploadWithImages(path, csv));
}

/** A new data item whose column images the consumer has built. */
async function builtItem(csv: string | Uint8Array<ArrayBuffer> = CSV): Promise<Item> {
  const item = await newItem(csv);
  expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });
  expect(prepareOutcomes().at(-1)).toBe("built");
  return item;
}

function currentRow(item: Item) {
  return dataItemRow(item.account, item.dataset, item.data).then((row) => row!);
}

async function storageOf(item: Item, token = owner.accessToken): Promise<DataStorage> {
  const response = await call(`/v1/data/${item.path}/metadata/storage`, { headers: authHeader(token) });
  return (await readEnvelope<DataStorage>(response, 200)).Data;
}

/** The column_images JSON D1 holds for the data item's current version, parsed. */
async function recordedImages(item: Item): Promise<ColumnImages | null> {
  const row = await env.DB.prepare("SELECT column_images AS images FROM data_items WHERE dataset_id = ? AND name = ?")
    .bind(await datasetId(item.account, item.dataset), item.data)
    .first<{ images: string | null }>();
  return row?.images ? (JSON.parse(row.images) as ColumnImages) : null;
}

function imageKeys(objectKey: string, columns = 3): string[] {
  return Array.from({ length: columns }, (_, i) => `${objectKey}.columns/${i}`);
}

/** What the consumer logged as the outcome of each prepare message, in order. */
function prepareOutcomes(): unknown[] {
  return logged.mock.calls
    .map(([line]) => {
      try {
        return JSON.parse(String(line)) as { prepare?: unknown; outcome?: unknown };
      } catch {
        return {};
      }
    })
    .filter((entry) => entry.prepare !== undefined)
    .map((entry) => entry.outcome);
}

/** env.BUCKET with some methods replaced. */
function bucketWith(replace: Partial<Record<keyof R2Bucket, unknown>>): R2Bucket {
  return new Proxy(env.BUCKET, {
    get(target, property) {
      if (property in replace) return replace[property as keyof R2Bucket];
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("asking for column images", () => {
  it("should send one request for the uploaded version, and report it not query-ready yet", async () => {
    const item = await newItem();
    const row = await currentRow(item);

    expect(item.queue.sent).toEqual([
      {
        prepare: { datasetId: await datasetId(item.account, item.dataset), name: item.data, version: row.version },
        memoryBudgetBytes: settings(env).query.memoryBudgetBytes,
        storeMinRows: settings(env).query.storeMinRows,
        maxStoreBytes: settings(env).query.maxStoreBytes,
      },
    ]);
    const storage = await storageOf(item);
    expect(storage).toEqual({
      Version: row.version,
      Size: CSV.length,
      RowCount: 37,
      DeliveryType: "RAW",
      UploadedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      UploadedBy: owner.accountName,
      QueryReady: false,
      ColumnImageBytes: null,
      TableStore: null,
    });
  });

  it("should send nothing when COLUMN_IMAGES is off", async () => {
    const dataset = bareName("off");
    await createDataset(owner.accessToken, owner.accountName, dataset);
    const queue = new TestQueue();

    const via = serviceWith(queue, { COLUMN_IMAGES: "off" });
    await readEnvelope(
      await upload(owner.accessToken, `${owner.accountName}/${dataset}/x`, CSV, {}, "x.csv", via),
      200,
    );

    expect(queue.sent).toEqual([]);
  });

  it("should refuse an upload with the configuration error, storing nothing, when COLUMN_IMAGES is neither build nor off", async () => {
    const dataset = bareName("bad");
    await createDataset(owner.accessToken, owner.accountName, dataset);
    const queue = new TestQueue();
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);

    const via = serviceWith(queue, { COLUMN_IMAGES: "sometimes" });
    const response = await upload(owner.accessToken, `${owner.accountName}/${dataset}/x`, CSV, {}, "x.csv", via);

    expect((await readEnvelope(response, 500)).Status.Message).toMatch(/^Internal error/);
    expect(String(errors.mock.calls[0]?.[0])).toContain("COLUMN_IMAGES must be");
    expect(await dataItemRow(owner.accountName, dataset, "x")).toBeNull();
    expect(await objectKeys(`data/${await datasetId(owner.accountName, dataset)}/`)).toEqual([]);
    expect(queue.sent).toEqual([]);
  });
});

describe("building column images", () => {
  it("should store one image per column, record their sizes, and leave no orphan", async () => {
    const item = await builtItem();
    const row = await currentRow(item);

    const storage = await storageOf(item);
    expect(storage).toMatchObject({ Version: row.version, QueryReady: true, RowCount: 37 });
    expect(storage.ColumnImageBytes).toHaveLength(3);
    expect(await objectKeys(item.prefix)).toEqual([row.objectKey, ...imageKeys(row.objectKey)].sort());
    expect(await recordedImages(item)).toEqual({
      format: 1,
      valuesPerRecord: 16,
      rows: 37,
      columns: imageKeys(row.objectKey).map((key, i) => ({ key, bytes: storage.ColumnImageBytes![i] })),
    });
    for (const [i, key] of imageKeys(row.objectKey).entries()) {
      const object = await env.BUCKET.get(key);
      const bytes = new Uint8Array(await object!.arrayBuffer());
      expect(bytes.byteLength).toBe(storage.ColumnImageBytes![i]);
      expect(new TextDecoder().decode(bytes.slice(0, 15))).toBe("SQLite format 3");
    }
    expect(await orphansUnder(item.prefix)).toEqual([]);
  });

  it("should let queries read the images of the columns they use instead of the CSV, with the same answer", async () => {
    const item = await newItem();
    const sql = `SELECT category, sum(amount), count(*) FROM ${item.table} GROUP BY 1 ORDER BY 1`;
    const before = await runSql(owner.accessToken, sql);
    await deliver(item.queue.sent);
    const bytes = (await storageOf(item)).ColumnImageBytes!;

    const after = await runSql(owner.accessToken, sql);
    const all = await runSql(owner.accessToken, `SELECT * FROM ${item.table}`);

    expect(before.status.Status, before.status.Message).toBe("succeeded");
    expect(before.status.BytesLoaded).toBe(CSV.length);
    expect(after.status.Status, after.status.Message).toBe("succeeded");
    expect(after.csv).toBe("category,sum(amount),count(*)\nc0,240.5,13\nc1,216.0,12\nc2,228.0,12\n");
    expect(after.csv).toBe(before.csv);
    expect(after.status.BytesLoaded).toBe(bytes[1]! + bytes[2]!);
    expect(all.status.BytesLoaded).toBe(bytes[0]! + bytes[1]! + bytes[2]!);
    expect(all.csv).toBe(CSV);
  });

  it("should build the images of a gzip upload from its rows", async () => {
    const item = await builtItem(await gzip(CSV));

    const run = await runSql(owner.accessToken, `SELECT sum(id), max(category), sum(amount) FROM ${item.table}`);

    expect(await storageOf(item)).toMatchObject({ DeliveryType: "GZIP", QueryReady: true });
    expect(run.csv).toBe("sum(id),max(category),sum(amount)\n703,c2,684.5\n");
    expect(run.status.BytesLoaded).toBe((await storageOf(item)).ColumnImageBytes!.reduce((a, b) => a + b, 0));
  });

  it("should answer a second request for the same version as already built, and change nothing", async () => {
    const item = await builtItem();
    const keys = await objectKeys(item.prefix);
    const uploaded = await Promise.all(keys.map(async (key) => (await env.BUCKET.head(key))!.etag));
    const recorded = await recordedImages(item);

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    expect(prepareOutcomes().at(-1)).toBe("already built");
    expect(await objectKeys(item.prefix)).toEqual(keys);
    expect(await Promise.all(keys.map(async (key) => (await env.BUCKET.head(key))!.etag))).toEqual(uploaded);
    expect(await recordedImages(item)).toEqual(recorded);
    expect(await orphansUnder(item.prefix)).toEqual([]);
  });

  it("should build nothing for a version replaced before its request is consumed, and leave nothing behind", async () => {
    const item = await newItem();
    const old = await currentRow(item);
    const second = await uploadWithImages(item.path, REPLACEMENT);

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    expect(prepareOutcomes().at(-1)).toBe("stale");
    const current = await currentRow(item);
    expect(await objectKeys(item.prefix)).toEqual([old.objectKey, current.objectKey].sort());
    expect((await orphansUnder(item.prefix)).map((orphan) => orphan.objectKey)).toEqual([old.objectKey]);
    expect(await storageOf(item)).toMatchObject({ QueryReady: false });

    await deliver(second.sent);
    expect(await storageOf(item)).toMatchObject({ Version: current.version, QueryReady: true, RowCount: 1 });
  });

  it("should throw away images built for a version that was replaced while they were being built", async () => {
    const item = await newItem();
    const old = await currentRow(item);
    let replaced = false;
    const bucket = bucketWith({
      put: async (key: string, value: Uint8Array) => {
        // The new version is committed while the old one's images are being stored.
        if (!replaced) {
          replaced = true;
          await uploadWithImages(item.path, REPLACEMENT);
        }
        return env.BUCKET.put(key, value);
      },
    });

    expect(outcomeOf(await deliver(item.queue.sent, { BUCKET: bucket }))).toEqual({ acked: 1, retried: [] });

    expect(replaced).toBe(true);
    expect(prepareOutcomes().at(-1)).toBe("stale");
    const current = await currentRow(item);
    expect(current.version).not.toBe(old.version);
    expect(await objectKeys(item.prefix)).toEqual([old.objectKey, current.objectKey].sort());
    expect((await orphansUnder(item.prefix)).map((orphan) => orphan.objectKey)).toEqual([old.objectKey]);
    expect(await storageOf(item)).toMatchObject({ QueryReady: false, ColumnImageBytes: null });
  });

  /**
   * Settings for a first delivery that stops at `pause` (after it found the
   * version without images) until released, and tells when it got there.
   */
  function pausedAt(pause: "reading the CSV" | "listing the keys") {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let reached = false;
    const wait = async () => {
      reached = true;
      await gate;
    };
    const overrides: Partial<Env> =
      pause === "reading the CSV"
        ? { BUCKET: bucketWith({ get: async (key: string) => (await wait(), env.BUCKET.get(key)) }) }
        : {
            DB: new Proxy(env.DB, {
              get(target, property) {
                if (property !== "prepare") return Reflect.get(target, property).bind(target);
                return (query: string) => {
                  const statement = target.prepare(query);
                  if (!query.startsWith("INSERT INTO orphan_objects")) return statement;
                  return {
                    bind: (...values: unknown[]) => ({
                      run: async () => (await wait(), statement.bind(...values).run()),
                    }),
                  };
                };
              },
            }),
          };
    return { overrides, reached: () => reached, release };
  }

  it.each(["reading the CSV", "listing the keys"] as const)(
    "should keep the images when the same request is consumed twice at once, the first delivery pausing at %s",
    async (pause) => {
      const item = await newItem();
      const row = await currentRow(item);
      const paused = pausedAt(pause);

      const first = deliver(item.queue.sent, paused.overrides);
      await eventually(async () => paused.reached(), Boolean);
      const second = await deliver(item.queue.sent);
      paused.release();
      const firstOutcome = await first;

      expect([outcomeOf(firstOutcome), outcomeOf(second)]).toEqual([
        { acked: 1, retried: [] },
        { acked: 1, retried: [] },
      ]);
      // The second delivery finished first; the first one found the version's images recorded when it was done.
      expect(prepareOutcomes()).toEqual(["built", "already built"]);
      expect(await storageOf(item)).toMatchObject({ QueryReady: true });
      expect(await objectKeys(item.prefix)).toEqual([row.objectKey, ...imageKeys(row.objectKey)].sort());
      // Nothing listed for the sweep, which would delete the images under the catalog.
      expect(await orphansUnder(item.prefix)).toEqual([]);
      const run = await runSql(owner.accessToken, `SELECT count(*), sum(amount) FROM ${item.table}`);
      expect(run.status.Status, run.status.Message).toBe("succeeded");
      expect(run.csv).toBe("count(*),sum(amount)\n37,684.5\n");
    },
  );

  it("should retry after a storage error, listing the keys for the sweep meanwhile, then build", async () => {
    const item = await newItem();
    const row = await currentRow(item);
    const failing = bucketWith({ get: () => Promise.reject(new Error("R2 is unavailable")) });

    const failed = await deliver(item.queue.sent, { BUCKET: failing });

    expect(outcomeOf(failed)).toEqual({ acked: 0, retried: [5] });
    expect(await storageOf(item)).toMatchObject({ QueryReady: false });
    const orphans = await orphansUnder(item.prefix);
    expect(orphans.map((orphan) => [orphan.objectKey, orphan.reason])).toEqual(
      imageKeys(row.objectKey).map((key) => [key, "column image being built"]),
    );
    // Not swept before a retry could finish the build.
    expect(Date.parse(orphans[0]!.deleteAfter) - Date.now()).toBeGreaterThan(3600_000);

    expect(outcomeOf(await deliver(item.queue.sent, {}, { attempts: 2 }))).toEqual({ acked: 1, retried: [] });

    expect(await storageOf(item)).toMatchObject({ QueryReady: true });
    expect(await orphansUnder(item.prefix)).toEqual([]);
  });

  it("should acknowledge a build that cannot succeed, leaving the version readable from its CSV", async () => {
    const item = await newItem();
    const row = await currentRow(item);
    // The catalog disagrees with the stored file.
    await env.DB.prepare("UPDATE data_items SET row_count = 38 WHERE object_key = ?").bind(row.objectKey).run();

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    expect(prepareOutcomes().at(-1)).toEqual({ failed: "sales has 37 rows, the catalog says 38" });
    expect(await objectKeys(item.prefix)).toEqual([row.objectKey]);
    expect(await orphansUnder(item.prefix)).toEqual([]);
    expect(await storageOf(item)).toMatchObject({ QueryReady: false });
    expect((await runSql(owner.accessToken, `SELECT count(*) FROM ${item.table}`)).csv).toBe("count(*)\n37\n");
  });

  it("should be acknowledged, without a build, by the dead-letter consumer", async () => {
    const item = await newItem();

    const outcome = await deliver(item.queue.sent, {}, { dead: true });

    expect(outcomeOf(outcome)).toEqual({ acked: 1, retried: [] });
    expect(await storageOf(item)).toMatchObject({ QueryReady: false });
    expect(await objectKeys(item.prefix)).toEqual([(await currentRow(item)).objectKey]);
  });

  it("should run a prepare message and a query message of the same batch", async () => {
    const item = await newItem();
    const queries = new TestQueue();
    const submitted = await call(
      "/v1/query",
      {
        method: "POST",
        headers: { ...authHeader(owner.accessToken), "content-type": "application/json" },
        body: JSON.stringify({ Sql: `SELECT max(id) FROM ${item.table}` }),
      },
      serviceWith(queries),
    );
    await readEnvelope(submitted, 200);

    const outcome = await deliver([...item.queue.sent, ...queries.sent]);

    expect(outcomeOf(outcome)).toEqual({ acked: 2, retried: [] });
    expect(await storageOf(item)).toMatchObject({ QueryReady: true });
  });
});

describe("column images and the life of a data item", () => {
  it("should list a replaced version's images for the sweep, which deletes them after the grace period", async () => {
    const item = await builtItem();
    const old = await currentRow(item);

    await uploadWithImages(item.path, REPLACEMENT);

    const current = await currentRow(item);
    expect(await storageOf(item)).toMatchObject({
      Version: current.version,
      QueryReady: false,
      ColumnImageBytes: null,
    });
    expect(await recordedImages(item)).toBeNull();
    const orphans = await orphansUnder(item.prefix);
    expect(orphans.map((orphan) => [orphan.objectKey, orphan.reason])).toEqual(
      [old.objectKey, ...imageKeys(old.objectKey)].map((key) => [key, "replaced by a new version"]),
    );

    await runMaintenance(env);
    expect(await objectKeys(item.prefix)).toEqual(
      [old.objectKey, ...imageKeys(old.objectKey), current.objectKey].sort(),
    );
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + (ORPHAN_GRACE_SECONDS + 1) * 1000);
    await runMaintenance(env);
    vi.useRealTimers();

    expect(await objectKeys(item.prefix)).toEqual([current.objectKey]);
    expect(await orphansUnder(item.prefix)).toEqual([]);
    expect((await runSql(owner.accessToken, `SELECT * FROM ${item.table}`)).csv).toBe(REPLACEMENT);
  });

  it("should list a deleted data item's images with its CSV", async () => {
    const item = await builtItem();
    const row = await currentRow(item);

    await readEnvelope(
      await call(`/v1/data/${item.path}`, { method: "DELETE", headers: authHeader(owner.accessToken) }),
      200,
    );

    const orphans = await orphansUnder(item.prefix);
    expect(orphans.map((orphan) => [orphan.objectKey, orphan.reason])).toEqual(
      [row.objectKey, ...imageKeys(row.objectKey)].map((key) => [key, "data item deleted"]),
    );
  });

  it("should list the images of every data item of a deleted dataset", async () => {
    const item = await builtItem();
    const first = await currentRow(item);
    const other = await uploadWithImages(`${item.account}/${item.dataset}/more`, "n,flag\n1,true\n2,false\n");
    await deliver(other.sent);
    const second = (await dataItemRow(item.account, item.dataset, "more"))!;
    expect(await objectKeys(item.prefix)).toHaveLength(2 + 3 + 2);

    await readEnvelope(
      await call(`/v1/dataset/${item.account}/${item.dataset}`, {
        method: "DELETE",
        headers: authHeader(owner.accessToken),
      }),
      200,
    );

    const orphans = await orphansUnder(item.prefix);
    expect(orphans.map((orphan) => [orphan.objectKey, orphan.reason])).toEqual(
      [first.objectKey, ...imageKeys(first.objectKey), second.objectKey, ...imageKeys(second.objectKey, 2)]
        .sort()
        .map((key) => [key, "dataset deleted"]),
    );
  });

  it("should fail a query whose images are gone from storage with a clear message", async () => {
    const item = await builtItem();
    const row = await currentRow(item);
    await env.BUCKET.delete(`${row.objectKey}.columns/0`);

    const run = await runSql(owner.accessToken, `SELECT sum(id) FROM ${item.table}`);

    expect(run.status.Status).toBe("failed");
    expect(run.status.Message).toBe(`Failed: the data of ${item.data} was replaced or deleted while the query ran.`);
  });
});

describe("asking again from the cron", () => {
  it("should ask for versions uploaded before the cutoff that have no images, and only those", async () => {
    const waiting = await newItem();
    const built = await builtItem();
    const queue = new TestQueue();
    const uploadedAt = (await storageOf(waiting)).UploadedAt;
    const requested = (cutoff: string) => {
      queue.sent.splice(0);
      return requestMissingPreparation({ ...env, ...IMAGES_ON, BUILD_QUEUE: queue }, cutoff, 10_000);
    };
    const prepareOf = async (item: Item): Promise<PrepareMessage> => ({
      prepare: {
        datasetId: await datasetId(item.account, item.dataset),
        name: item.data,
        version: (await currentRow(item)).version,
      },
      memoryBudgetBytes: settings(env).query.memoryBudgetBytes,
      storeMinRows: settings(env).query.storeMinRows,
      maxStoreBytes: settings(env).query.maxStoreBytes,
    });

    expect(await requested(uploadedAt)).toBe(queue.sent.length);
    expect(queue.sent).toContainEqual(await prepareOf(waiting));
    expect(queue.sent).not.toContainEqual(await prepareOf(built));
    await requested(new Date(Date.parse(uploadedAt) - 1000).toISOString().replace(/\.\d{3}Z$/, "Z"));
    expect(queue.sent).not.toContainEqual(await prepareOf(waiting));
    await requested("2999-01-01T00:00:00Z");
    expect(queue.sent).not.toContainEqual(await prepareOf(built));
    expect(
      await requestMissingPreparation({ ...env, COLUMN_IMAGES: "off", BUILD_QUEUE: queue }, "2999-01-01T00:00:00Z"),
    ).toBe(0);
  });

  it("should have the maintenance run ask for an old version without images, which the consumer then builds", async () => {
    const item = await newItem();
    await env.DB.prepare("UPDATE data_items SET uploaded_at = '2000-01-01T00:00:00Z' WHERE object_key = ?")
      .bind((await currentRow(item)).objectKey)
      .run();
    const queue = new TestQueue();
    const off = new TestQueue();

    await runMaintenance({ ...env, ...IMAGES_ON, BUILD_QUEUE: queue });
    await runMaintenance({ ...env, COLUMN_IMAGES: "off", BUILD_QUEUE: off });

    expect(off.sent).toEqual([]);
    expect(queue.prepares()).toContainEqual(item.queue.prepares()[0]);
    const mine = queue.prepares().filter((message) => message.prepare.name === item.data);
    expect(outcomeOf(await deliver(mine))).toEqual({ acked: mine.length, retried: [] });
    expect(await storageOf(item)).toMatchObject({ QueryReady: true });
  });
});

describe("GET /v1/data/{AccountName}/{DatasetName}/{DataName}/metadata/storage", () => {
  it("should answer 401 without a token, and 404 to a stranger as for data that does not exist", async () => {
    const item = await newItem();
    const stranger = await login(uniqueName("stranger"));
    const get = (path: string) =>
      call(`/v1/data/${path}/metadata/storage`, { headers: authHeader(stranger.accessToken) });

    await readEnvelope(await call(`/v1/data/${item.path}/metadata/storage`), 401);
    const hidden = await readEnvelope(await get(item.path), 404);
    const missing = await readEnvelope(await get(`${item.account}/${item.dataset}/none`), 404);

    expect(hidden.Status.Message).toBe(missing.Status.Message.replace("none", item.data));
  });

  it("should answer a grantee what it answers the owner", async () => {
    const item = await builtItem();
    const reader = await login(uniqueName("reader"));
    await readEnvelope(await grant(owner.accessToken, item.account, item.dataset, reader.accountName, "read"), 200);

    expect(await storageOf(item, reader.accessToken)).toEqual(await storageOf(item));
  });
});
