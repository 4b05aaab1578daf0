import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { DataStorage } from "../../../src/sdk";
import { prepareItem, requestMissingPreparation, type PrepareMessage } from "../../../src/worker/query/prepare-item";
import { storeEmptier, tableStoreStub } from "../../../src/worker/query/store/store-state";
import type { TableStore } from "../../../src/worker/query/store/table-store";
import { sweepOrphans } from "../../../src/worker/storage/orphans";
import { isoSeconds, nowSeconds } from "../../../src/worker/util/time";
import {
  createDataset,
  dataItemRow,
  datasetId,
  makeOrphansDue,
  objectKeys,
  orphansUnder,
  upload,
} from "../../support/catalog";
import { call, readEnvelope } from "../../support/http";
import { authHeader, login, type LoggedIn } from "../../support/login";
import {
  bareName,
  consume,
  deliver,
  eventually,
  newQueuedItem,
  outcomeOf,
  runSql,
  serviceWith,
  stateWith,
  statusOf,
  submitOk,
  TestQueue,
  type QueryRun,
  type QueryStatusData,
  type QueuedItem,
} from "../../support/query";
import { storeTables } from "../../support/store";

// A data item with at least TABLE_STORE_MIN_ROWS rows gets a table store: the
// upload marks it "building" and asks the build queue, the real consumer
// fills the store and records it ready, queries then run in it; replacing
// or deleting the item lists the store for the sweep, which empties it.

const CSV =
  "id,category,amount\n" + Array.from({ length: 37 }, (_, i) => `${i + 1},c${i % 3},${i}.5`).join("\n") + "\n";
const TOTALS = "count(*),sum(amount)\n37,684.5\n";
const REPLACEMENT = "id,category,amount\n" + Array.from({ length: 12 }, (_, i) => `${i + 1},x,1.5`).join("\n") + "\n";
/** Items of 10 rows or more get a table store. */
const STORE_ON: Partial<Env> = { COLUMN_IMAGES: "build", TABLE_STORE_MIN_ROWS: "10" };

let owner: LoggedIn;

beforeAll(async () => {
  owner = await login(bareName("storer"));
});

beforeEach(() => {
  vi.spyOn(console, "log").mockImplementation(() => undefined);
  vi.spyOn(console, "error").mockImplementation(() => undefined);
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Uploads through a queue of its own, with table stores on (and any other settings); returns that queue. */
async function uploadTo(path: string, csv = CSV, settings: Partial<Env> = {}): Promise<TestQueue> {
  const queue = new TestQueue();
  const via = serviceWith(queue, { ...STORE_ON, ...settings });
  await readEnvelope(await upload(owner.accessToken, path, csv, {}, "sales.csv", via), 200);
  return queue;
}

/** A new dataset of the owner with one large data item uploaded (its store asked for, not built). */
type Item = QueuedItem;

async function newItem(settings: Partial<Env> = {}, data = "sales"): Promise<Item> {
  return newQueuedItem(owner, "store", data, (path) => uploadTo(path, CSV, settings));
}

/** A new data item whose store the consumer has built. */
async function builtItem(): Promise<Item> {
  const item = await newItem();
  expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });
  expect((await storageOf(item)).TableStore?.State).toBe("ready");
  return item;
}

async function objectKeyOf(item: Item, data = item.data): Promise<string> {
  return (await dataItemRow(item.account, item.dataset, data))!.objectKey;
}

async function storageOf(item: Item): Promise<DataStorage> {
  const response = await call(`/v1/data/${item.path}/metadata/storage`, { headers: authHeader(owner.accessToken) });
  return (await readEnvelope<DataStorage>(response, 200)).Data;
}

async function storageMessageOf(item: Item): Promise<string> {
  const response = await call(`/v1/data/${item.path}/metadata/storage`, { headers: authHeader(owner.accessToken) });
  return (await readEnvelope(response, 200)).Status.Message;
}

function engineOf(run: QueryRun): string | null {
  return (run.status as QueryStatusData & { Engine: string | null }).Engine;
}

/** Empties the stores (and deletes the objects) listed as orphans under a dataset, as the sweep does when due. */
async function sweep(item: Item): Promise<void> {
  await makeOrphansDue(`table-store/${item.prefix}`);
  await sweepOrphans(env.DB, env.BUCKET, storeEmptier(env), isoSeconds(nowSeconds()));
}

/** A TABLE_STORE namespace whose objects' builds go through `build` (given the real one). */
function storesThat(build: (real: () => Promise<unknown>) => Promise<unknown>): DurableObjectNamespace<TableStore> {
  return new Proxy(env.TABLE_STORE, {
    get(target, property) {
      if (property === "get")
        return (id: DurableObjectId) =>
          new Proxy(target.get(id), {
            get(stub, method) {
              const value: unknown = Reflect.get(stub, method);
              if (method !== "build" || typeof value !== "function") return value;
              return (...args: unknown[]) => build(() => Reflect.apply(value, stub, args) as Promise<unknown>);
            },
          });
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A TABLE_STORE namespace whose objects stop (throw) whenever they are asked to build. */
function storesThatStop(): DurableObjectNamespace<TableStore> {
  return storesThat(() => Promise.reject(new Error("Durable Object reset during the build")));
}

describe("building a table store", () => {
  it("should mark a large item as building at upload, and ask the build queue with the store settings", async () => {
    const item = await newItem();

    expect(item.queue.prepares()).toEqual([
      expect.objectContaining({
        prepare: expect.objectContaining({ name: item.data }),
        storeMinRows: 10,
        maxStoreBytes: Number(env.TABLE_STORE_MAX_BYTES),
      }),
    ]);
    expect(await storageOf(item)).toMatchObject({
      QueryReady: false,
      TableStore: { State: "building", Rows: null, Bytes: null, Message: null },
    });
    expect(await storageMessageOf(item)).toBe("OK: table store being built");
  });

  it("should not give a store to an item below TABLE_STORE_MIN_ROWS", async () => {
    const item = await newItem({ TABLE_STORE_MIN_ROWS: "38" });

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    const storage = await storageOf(item);
    expect(storage.TableStore).toBeNull();
    expect(storage.ColumnImageBytes).toHaveLength(3);
    expect(await tableStoreStub(env, await objectKeyOf(item)).rows()).toBeNull();
  });

  it("should give an item wider than a store's tables may be column images instead, and query it in sql.js", async () => {
    const names = Array.from({ length: 101 }, (_, i) => `c${i}`);
    const wide = [names, ...Array.from({ length: 12 }, (_, row) => names.map((_, i) => row * i))]
      .map((cells) => cells.join(","))
      .join("\n");
    const item = await newQueuedItem(owner, "store", "wide", (path) => uploadTo(path, `${wide}\n`));

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    const storage = await storageOf(item);
    expect(storage.TableStore).toBeNull();
    expect(storage.ColumnImageBytes).toHaveLength(101);
    const run = await runSql(owner.accessToken, `SELECT count(*), sum(c100) FROM ${item.table}`);
    expect(engineOf(run)).toBe("sqljs");
    expect(run.csv).toBe("count(*),sum(c100)\n12,6600\n");
  });

  it("should fill the store, record it ready with its rows and bytes, and build no column images", async () => {
    const item = await newItem();

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    const storage = await storageOf(item);
    expect(storage).toMatchObject({
      QueryReady: true,
      ColumnImageBytes: null,
      TableStore: { State: "ready", Rows: 37, Message: null },
    });
    expect(storage.TableStore?.Bytes).toBeGreaterThan(0);
    expect(await storageMessageOf(item)).toBe("OK: query-ready");
    const objectKey = await objectKeyOf(item);
    expect(await tableStoreStub(env, objectKey).rows()).toBe(37);
    expect(await objectKeys(item.prefix)).toEqual([objectKey]);
    expect(await orphansUnder(item.prefix)).toEqual([]);
  });

  it("should run queries on the item in its store once built, with the answer sql.js gives", async () => {
    const item = await newItem();
    const sql = `SELECT count(*), sum(amount) FROM ${item.table}`;
    await deliver(item.queue.sent);

    const after = await runSql(owner.accessToken, sql);

    expect(engineOf(after)).toBe("store");
    expect(after.status.Status).toBe("succeeded");
    expect(after.csv).toBe(TOTALS);
  });

  it("should answer a second request for a built version as already built, and change nothing", async () => {
    const item = await builtItem();
    const storage = await storageOf(item);

    const again = await prepareItem(env, item.queue.prepares()[0]!);

    expect(again).toBe("already built");
    expect(await storageOf(item)).toEqual(storage);
  });

  it("should build a store once when two requests for it run at the same time", async () => {
    const item = await newItem();
    const message = item.queue.prepares()[0]!;

    const outcomes = await Promise.all([prepareItem(env, message), prepareItem(env, message)]);

    expect(outcomes).toContain("built");
    expect(await storageOf(item)).toMatchObject({ TableStore: { State: "ready", Rows: 37 } });
    expect(await tableStoreStub(env, await objectKeyOf(item)).rows()).toBe(37);
  });

  it("should record a build past TABLE_STORE_MAX_BYTES as failed, empty the store, and query the CSV in sql.js", async () => {
    const item = await newItem({ TABLE_STORE_MAX_BYTES: "1" });

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    const storage = await storageOf(item);
    expect(storage).toMatchObject({ QueryReady: false, TableStore: { State: "failed", Rows: null, Bytes: null } });
    expect(storage.TableStore?.Message).toBe(
      "Failed: the table store would hold more than the limit of 1 bytes (TABLE_STORE_MAX_BYTES).",
    );
    expect(await storageMessageOf(item)).toBe("OK: the table store could not be built; queries read the CSV");
    expect(await tableStoreStub(env, await objectKeyOf(item)).rows()).toBeNull();
    expect(await storeTables(await objectKeyOf(item))).toEqual([]);
    expect(await prepareItem(env, item.queue.prepares()[0]!)).toEqual({ failed: storage.TableStore?.Message });
    const run = await runSql(owner.accessToken, `SELECT count(*), sum(amount) FROM ${item.table}`);
    expect(engineOf(run)).toBe("sqljs");
    expect(run.csv).toBe(TOTALS);
  });

  it("should record a build whose stored file is gone as failed", async () => {
    const item = await newItem();
    await env.BUCKET.delete(await objectKeyOf(item));

    const outcome = await prepareItem(env, item.queue.prepares()[0]!);

    expect(outcome).toEqual({ failed: "the stored file of sales is gone" });
    expect(await storageOf(item)).toMatchObject({
      TableStore: { State: "failed", Message: "the stored file of sales is gone" },
    });
  });

  it("should build nothing for a version replaced before its request is consumed", async () => {
    const item = await newItem();
    const old = await objectKeyOf(item);
    await uploadTo(item.path, REPLACEMENT);

    expect(await prepareItem(env, item.queue.prepares()[0]!)).toBe("stale");

    expect(await tableStoreStub(env, old).rows()).toBeNull();
    expect(await storageOf(item)).toMatchObject({ RowCount: 12, TableStore: { State: "building" } });
  });

  it("should retry a build whose store stopped, keep the item building, and build it when the cron asks again", async () => {
    const item = await newItem();

    const stopped = await deliver(item.queue.sent, { TABLE_STORE: storesThatStop() });

    expect(outcomeOf(stopped)).toEqual({ acked: 0, retried: [5] });
    expect(await storageOf(item)).toMatchObject({ QueryReady: false, TableStore: { State: "building" } });
    const cron = new TestQueue();
    await requestMissingPreparation({ ...env, ...STORE_ON, BUILD_QUEUE: cron }, "2999-01-01T00:00:00Z", 10_000);
    const mine = cron.prepares().filter((message: PrepareMessage) => message.prepare.name === item.data);
    expect(mine.map((message) => message.prepare)).toContainEqual(item.queue.prepares()[0]!.prepare);
    expect(outcomeOf(await deliver(mine))).toEqual({ acked: mine.length, retried: [] });
    expect(await storageOf(item)).toMatchObject({ QueryReady: true, TableStore: { State: "ready", Rows: 37 } });
  });

  it("should start over a store left half filled by a build that stopped", async () => {
    const item = await newItem();
    const stub = tableStoreStub(env, await objectKeyOf(item));
    await runInDurableObject(stub, (_instance: TableStore, state) => {
      state.storage.sql.exec('CREATE TABLE "data_half" ("id" INTEGER, "category" TEXT, "amount" REAL)');
      state.storage.sql.exec("INSERT INTO \"data_half\" VALUES (1, 'c0', 0.5), (2, 'c1', 1.5)");
    });
    expect(await stub.rows()).toBeNull();

    expect(outcomeOf(await deliver(item.queue.sent))).toEqual({ acked: 1, retried: [] });

    expect(await stub.rows()).toBe(37);
    expect(await storeTables(await objectKeyOf(item))).toEqual([expect.stringMatching(/^data_(?!half)/)]);
    const run = await runSql(owner.accessToken, `SELECT count(*), sum(amount) FROM ${item.table}`);
    expect(engineOf(run)).toBe("store");
    expect(run.csv).toBe(TOTALS);
  });

  /** A new item whose store is not built yet, and a query on it queued with settings that make it wait for the store. */
  async function queuedForUnbuiltStore(): Promise<{ item: Item; limits: Partial<Env>; queryId: string }> {
    const item = await newItem();
    // The used columns' estimate (16 bytes a row at least) is over the load limit: the planner waits for the store.
    const limits: Partial<Env> = { QUERY_MAX_LOAD_BYTES: "100" };
    const queryId = await submitOk(
      owner.accessToken,
      `SELECT count(*), sum(amount) FROM ${item.table}`,
      serviceWith(new TestQueue(), limits),
    );
    return { item, limits, queryId };
  }

  it("should have a query wait while the store is built when it would not fit sql.js, then run in the store", async () => {
    const { item, limits, queryId } = await queuedForUnbuiltStore();
    const running = consume([queryId], limits);

    const waiting = await eventually(
      () => statusOf(owner.accessToken, queryId),
      (status) => status.Message.startsWith("Waiting"),
    );
    expect(waiting.Status).toBe("running");
    expect(waiting.Message).toBe(
      `Waiting: the table store of ${owner.accountName}.${item.dataset}.${item.data} (37 rows) is being built; the query runs when it is ready.`,
    );
    await deliver(item.queue.sent);
    expect(outcomeOf(await running)).toEqual({ acked: 1, retried: [] });

    const status = await statusOf(owner.accessToken, queryId);
    expect(status.Status, status.Message).toBe("succeeded");
    expect((status as QueryStatusData & { Engine: string | null }).Engine).toBe("store");
  });

  it("should hand the wait for a store being built from the quick lane to the long lane, where it waits and runs", async () => {
    const { item, limits, queryId } = await queuedForUnbuiltStore();
    const moves: string[] = [];
    const recording = stateWith("toLongLane", (real) => async (message: string) => {
      moves.push(message);
      return real.requeue(message);
    });

    const quick = await consume([queryId], { ...limits, QUERY_STATE: recording }, { quickLane: true });

    expect(outcomeOf(quick)).toEqual({ acked: 1, retried: [] });
    expect(moves).toEqual([
      `Queued: in the lane for long queries (it waits for the table store of ${owner.accountName}.${item.dataset}.${item.data} to be built); it runs from the start there.`,
    ]);
    expect(await statusOf(owner.accessToken, queryId)).toMatchObject({ Status: "queued" });
    const running = consume([queryId], limits);
    await eventually(
      () => statusOf(owner.accessToken, queryId),
      (status) => status.Message.startsWith("Waiting"),
    );
    await deliver(item.queue.sent);
    expect(outcomeOf(await running)).toEqual({ acked: 1, retried: [] });
    expect(await statusOf(owner.accessToken, queryId)).toMatchObject({ Status: "succeeded", RowCount: 1 });
  });
});

describe("a table store and the life of its data item", () => {
  it("should list a replaced version's store for the sweep, which empties it, and query the new version", async () => {
    const item = await builtItem();
    const old = await objectKeyOf(item);

    const queue = await uploadTo(item.path, REPLACEMENT);

    const current = await objectKeyOf(item);
    expect(await orphansUnder(`table-store/${item.prefix}`)).toEqual([
      expect.objectContaining({ objectKey: `table-store/${old}`, reason: "replaced by a new version" }),
    ]);
    expect(await storageOf(item)).toMatchObject({ RowCount: 12, TableStore: { State: "building" } });
    expect(await tableStoreStub(env, old).rows()).toBe(37);
    expect(await storeTables(old)).toEqual([expect.stringMatching(/^data_\w+$/)]);
    await sweep(item);
    expect(await tableStoreStub(env, old).rows()).toBeNull();
    expect(await storeTables(old)).toEqual([]);
    expect(await orphansUnder(`table-store/${item.prefix}`)).toEqual([]);
    await deliver(queue.sent);
    expect(await tableStoreStub(env, current).rows()).toBe(12);
    const run = await runSql(owner.accessToken, `SELECT count(*), sum(amount) FROM ${item.table}`);
    expect(engineOf(run)).toBe("store");
    expect(run.csv).toBe("count(*),sum(amount)\n12,18.0\n");
  });

  it("should list a deleted data item's store for the sweep, which empties it", async () => {
    const item = await builtItem();
    const objectKey = await objectKeyOf(item);

    await readEnvelope(
      await call(`/v1/data/${item.path}`, { method: "DELETE", headers: authHeader(owner.accessToken) }),
      200,
    );

    expect(await orphansUnder(`table-store/${item.prefix}`)).toEqual([
      expect.objectContaining({ objectKey: `table-store/${objectKey}`, reason: "data item deleted" }),
    ]);
    await sweep(item);
    expect(await tableStoreStub(env, objectKey).rows()).toBeNull();
    expect(await storeTables(objectKey)).toEqual([]);
    expect(await orphansUnder(`table-store/${item.prefix}`)).toEqual([]);
  });

  it("should list the stores of every data item of a deleted dataset, which the sweep empties", async () => {
    const item = await builtItem();
    const more = await uploadTo(`${item.account}/${item.dataset}/more`);
    await deliver(more.sent);
    const keys = [await objectKeyOf(item), await objectKeyOf(item, "more")];
    for (const key of keys) expect(await tableStoreStub(env, key).rows()).toBe(37);

    await readEnvelope(
      await call(`/v1/dataset/${item.account}/${item.dataset}`, {
        method: "DELETE",
        headers: authHeader(owner.accessToken),
      }),
      200,
    );

    const orphans = await orphansUnder(`table-store/${item.prefix}`);
    expect(orphans.map((orphan) => [orphan.objectKey, orphan.reason])).toEqual(
      keys.map((key) => [`table-store/${key}`, "dataset deleted"]).sort(),
    );
    await sweep(item);
    for (const key of keys) expect(await tableStoreStub(env, key).rows()).toBeNull();
    for (const key of keys) expect(await storeTables(key)).toEqual([]);
  });

  it("should not record a store whose item is deleted while it is built, and leave it for the sweep", async () => {
    const item = await newItem();
    const objectKey = await objectKeyOf(item);
    const deleteFirst = storesThat(async (build) => {
      await readEnvelope(
        await call(`/v1/data/${item.path}`, { method: "DELETE", headers: authHeader(owner.accessToken) }),
        200,
      );
      return build();
    });

    expect(await prepareItem({ ...env, TABLE_STORE: deleteFirst }, item.queue.prepares()[0]!)).toBe("stale");

    expect(await tableStoreStub(env, objectKey).rows()).toBe(37);
    expect(await orphansUnder(`table-store/${item.prefix}`)).toEqual([
      expect.objectContaining({ objectKey: `table-store/${objectKey}`, reason: "data item deleted" }),
    ]);
    await sweep(item);
    expect(await tableStoreStub(env, objectKey).rows()).toBeNull();
    expect(await storeTables(objectKey)).toEqual([]);
  });
});
