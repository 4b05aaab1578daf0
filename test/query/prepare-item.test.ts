import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { deleteDataItem } from "../../src/catalog/datasets";
import { consumeDeadQueries, consumeQueries, type WorkMessage } from "../../src/query/consumer";
import { requestMissingImages, type PrepareMessage } from "../../src/query/prepare-item";
import {
  datasetId,
  createDataset,
  dataItemRow,
  objectKeys,
  orphansUnder,
  upload,
  uniqueName,
} from "../support/catalog";
import { call, readEnvelope, workerWith } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import { runSql } from "../support/query";

// The column images of a data item, end to end in the Worker: the upload asks
// the queue, the consumer builds and records them, queries read them, and
// replacing or deleting the data lists them for the sweep.

interface Storage {
  Version: string;
  RowCount: number;
  QueryReady: boolean;
  ColumnImageBytes: number[] | null;
}

/** A queue that only keeps what is sent. */
class KeptQueue {
  readonly sent: WorkMessage[] = [];
  async send(body: WorkMessage) {
    this.sent.push(body);
  }
  async sendBatch(messages: Iterable<{ body: WorkMessage }>) {
    for (const message of messages) this.sent.push(message.body);
  }
}

let owner: LoggedIn;
let counter = 0;

beforeAll(async () => {
  owner = await login(uniqueName("imager"));
});

const CSV =
  "id,category,amount\n" + Array.from({ length: 37 }, (_, i) => `${i + 1},c${i % 3},${i}.5`).join("\n") + "\n";

/** Uploads with images on, through a kept queue; returns the queue and the data item's path. */
async function uploaded(csv = CSV, path?: string): Promise<{ queue: KeptQueue; path: string }> {
  const queue = new KeptQueue();
  let target = path;
  if (!target) {
    const dataset = uniqueName("img");
    await createDataset(owner.accessToken, owner.accountName, dataset);
    target = `${owner.accountName}/${dataset}/sales`;
  }
  const via = workerWith({ COLUMN_IMAGES: "build", QUERY_QUEUE: queue as unknown as Queue });
  await readEnvelope(await upload(owner.accessToken, target, csv, {}, "sales.csv", via), 200);
  return { queue, path: target };
}

/** Delivers messages to the real consumer (or the dead-letter one); returns the acks. */
async function deliver(bodies: WorkMessage[], dead = false): Promise<number> {
  const batch = createMessageBatch<WorkMessage>(
    dead ? "dqs-queries-dlq" : "dqs-queries",
    bodies.map((body) => ({ id: `prepare-${++counter}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await (dead ? consumeDeadQueries : consumeQueries)(batch, env);
  const result = await getQueueResult(batch, ctx);
  expect(result.retryMessages).toEqual([]);
  return result.explicitAcks.length;
}

async function storageOf(path: string): Promise<Storage> {
  const response = await call(`/v1/data/${path}/metadata/storage`, { headers: authHeader(owner.accessToken) });
  return (await readEnvelope<Storage>(response, 200)).Data!;
}

function prefixOf(path: string) {
  const [account, dataset] = path.split("/");
  return datasetId(account!, dataset!).then((id) => `data/${id}/`);
}

describe("column images of an upload", () => {
  it("should be asked for by the upload, built by the consumer, and then read by queries", async () => {
    const { queue, path } = await uploaded();
    const [account, dataset, data] = path.split("/") as [string, string, string];
    const row = (await dataItemRow(account, dataset, data))!;

    expect(queue.sent).toEqual([
      { prepare: { datasetId: await datasetId(account, dataset), name: data, version: row.version } },
    ]);
    expect(await storageOf(path)).toMatchObject({ QueryReady: false, ColumnImageBytes: null, RowCount: 37 });

    expect(await deliver(queue.sent)).toBe(1);

    const storage = await storageOf(path);
    expect(storage.QueryReady).toBe(true);
    expect(storage.ColumnImageBytes).toHaveLength(3);
    const prefix = await prefixOf(path);
    expect(await objectKeys(prefix)).toEqual(
      [row.objectKey, ...[0, 1, 2].map((i) => `${row.objectKey}.columns/${i}`)].sort(),
    );
    expect(await orphansUnder(prefix)).toEqual([]);

    const run = await runSql(
      owner.accessToken,
      `SELECT category, sum(amount) FROM "${account}"."${dataset}"."${data}" GROUP BY 1 ORDER BY 1`,
    );
    expect(run.status.Status, run.status.Message).toBe("succeeded");
    expect(run.csv).toBe("category,sum(amount)\nc0,240.5\nc1,216.0\nc2,228.0\n");
    // Loaded: the images of the two columns used, not the CSV.
    expect(run.status.BytesLoaded).toBe(storage.ColumnImageBytes![1]! + storage.ColumnImageBytes![2]!);
  });

  it("should do nothing for a second request of the same version", async () => {
    const { queue, path } = await uploaded();
    await deliver(queue.sent);
    const prefix = await prefixOf(path);
    const before = await objectKeys(prefix);

    expect(await deliver(queue.sent)).toBe(1);

    expect(await objectKeys(prefix)).toEqual(before);
  });

  it("should build nothing for a version replaced meanwhile, and leave nothing behind", async () => {
    const first = await uploaded();
    const second = await uploaded("id,category,amount\n1,x,2.5\n", first.path);
    const prefix = await prefixOf(first.path);
    const [account, dataset, data] = first.path.split("/") as [string, string, string];
    const current = (await dataItemRow(account, dataset, data))!;

    expect(await deliver(first.queue.sent)).toBe(1);

    expect((await objectKeys(prefix)).filter((key) => key.includes(".columns/"))).toEqual([]);
    expect((await orphansUnder(prefix)).map((o) => o.objectKey)).not.toContain(`${current.objectKey}.columns/0`);
    await deliver(second.queue.sent);
    expect(await storageOf(first.path)).toMatchObject({ QueryReady: true, RowCount: 1 });
  });

  it("should list a replaced version's images as orphans, and start the new version without images", async () => {
    const { queue, path } = await uploaded();
    await deliver(queue.sent);
    const [account, dataset, data] = path.split("/") as [string, string, string];
    const old = (await dataItemRow(account, dataset, data))!;

    await uploaded("id,category,amount\n1,x,2.5\n", path);

    expect(await storageOf(path)).toMatchObject({ QueryReady: false, ColumnImageBytes: null });
    const orphans = await orphansUnder(await prefixOf(path));
    expect(orphans.filter((o) => o.objectKey.startsWith(`${old.objectKey}.columns/`)).map((o) => o.reason)).toEqual([
      "replaced by a new version",
      "replaced by a new version",
      "replaced by a new version",
    ]);
  });

  it("should list a deleted data item's images as orphans", async () => {
    const { queue, path } = await uploaded();
    await deliver(queue.sent);
    const [account, dataset, data] = path.split("/") as [string, string, string];
    const row = (await dataItemRow(account, dataset, data))!;

    expect(await deleteDataItem(env.DB, await datasetId(account, dataset), data, "2100-01-01T00:00:00Z")).toBe(true);

    const keys = (await orphansUnder(await prefixOf(path))).map((o) => o.objectKey);
    expect(keys).toEqual([row.objectKey, ...[0, 1, 2].map((i) => `${row.objectKey}.columns/${i}`)].sort());
  });

  it("should be acknowledged by the dead-letter consumer", async () => {
    const message: PrepareMessage = { prepare: { datasetId: "nope", name: "nope", version: "nope" } };
    expect(await deliver([message], true)).toBe(1);
  });

  it("should not be asked for when COLUMN_IMAGES is off", async () => {
    const queue = new KeptQueue();
    const dataset = uniqueName("off");
    await createDataset(owner.accessToken, owner.accountName, dataset);
    const via = workerWith({ COLUMN_IMAGES: "off", QUERY_QUEUE: queue as unknown as Queue });
    await readEnvelope(
      await upload(owner.accessToken, `${owner.accountName}/${dataset}/x`, CSV, {}, "x.csv", via),
      200,
    );
    expect(queue.sent).toEqual([]);
  });

  it("should be asked for again by the cron for versions still without images", async () => {
    const { path } = await uploaded();
    const [account, dataset, data] = path.split("/") as [string, string, string];
    const queue = new KeptQueue();

    await requestMissingImages(
      { ...env, COLUMN_IMAGES: "build", QUERY_QUEUE: queue as unknown as Queue },
      "2999-01-01T00:00:00Z",
      500,
    );

    const version = (await dataItemRow(account, dataset, data))!.version;
    expect(queue.sent).toContainEqual({
      prepare: { datasetId: await datasetId(account, dataset), name: data, version },
    });
  });

  it("should answer the storage endpoint only to those who may read the data", async () => {
    const { path } = await uploaded();
    const stranger = await login(uniqueName("stranger"));

    await readEnvelope(await call(`/v1/data/${path}/metadata/storage`), 401);
    const hidden = await readEnvelope(
      await call(`/v1/data/${path}/metadata/storage`, { headers: authHeader(stranger.accessToken) }),
      404,
    );
    expect(hidden.Status.Message).toMatch(/not found, or you may not access it/);
  });
});
