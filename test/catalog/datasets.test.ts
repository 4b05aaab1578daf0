import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { findDataItem, findDataset, type DatasetRecord } from "../../src/worker/catalog/access";
import { findOrCreateUser, type UserRecord } from "../../src/worker/catalog/accounts";
import {
  commitDataItemVersion,
  deleteDataItem,
  deleteDataset,
  findAccountId,
  grantAccess,
  listDataItems,
  putDataset,
  revokeAccess,
  type NewVersion,
} from "../../src/worker/catalog/datasets";
import { orphansUnder, uniqueName } from "../support/catalog";

const NOW = "2026-11-22T09:00:00Z";
const LATER = "2026-11-22T10:00:00Z";
const GRACE_OVER = "2026-11-22T11:00:00Z";

let owner: UserRecord;
let other: UserRecord;

beforeAll(async () => {
  const user = (name: string) =>
    findOrCreateUser(env.DB, { issuer: "https://idp.example.test", subject: name, preferredUsername: name }, NOW);
  owner = await user("cds-owner");
  other = await user("cds-other");
});

async function newDataset(settings: { visibility?: "private" | "public"; description?: string } = {}) {
  const name = uniqueName("cds");
  await putDataset(env.DB, owner.accountId, name, settings, NOW);
  return (await findDataset(env.DB, owner, owner.accountName, name))!.dataset;
}

function version(dataset: DatasetRecord, name: string, tag: string): NewVersion {
  return {
    datasetId: dataset.id,
    name,
    version: tag,
    objectKey: `data/${dataset.id}/${tag}`,
    size: 10,
    rowCount: 2,
    schema: `{"tag":"${tag}"}`,
    deliveryType: "RAW",
    contentHash: tag,
    uploadedBy: owner.userId,
  };
}

async function grantsOf(datasetId: string): Promise<{ accountId: string; permission: string }[]> {
  const { results } = await env.DB.prepare(
    "SELECT account_id AS accountId, permission FROM grants WHERE dataset_id = ? ORDER BY account_id",
  )
    .bind(datasetId)
    .all<{ accountId: string; permission: string }>();
  return results;
}

describe("putDataset", () => {
  it("should create a private dataset with an empty description by default", async () => {
    const name = uniqueName("cds");

    expect(await putDataset(env.DB, owner.accountId, name, {}, NOW)).toBe("created");

    const found = await findDataset(env.DB, owner, owner.accountName, name);
    expect(found?.dataset).toMatchObject({ name, visibility: "private", description: "", createdAt: NOW });
  });

  it("should answer 'updated' for an existing dataset and apply only the settings given", async () => {
    const dataset = await newDataset({ visibility: "public", description: "first" });

    expect(await putDataset(env.DB, owner.accountId, dataset.name, { description: "second" }, LATER)).toBe("updated");
    expect(await putDataset(env.DB, owner.accountId, dataset.name, {}, GRACE_OVER)).toBe("updated");

    const found = await findDataset(env.DB, owner, owner.accountName, dataset.name);
    expect(found?.dataset).toMatchObject({
      id: dataset.id,
      visibility: "public",
      description: "second",
      createdAt: NOW,
      updatedAt: LATER,
    });
  });

  it("should keep the same name under two accounts apart", async () => {
    const dataset = await newDataset();

    expect(await putDataset(env.DB, other.accountId, dataset.name, { visibility: "public" }, NOW)).toBe("created");

    expect((await findDataset(env.DB, owner, owner.accountName, dataset.name))?.dataset.visibility).toBe("private");
  });
});

describe("grantAccess and revokeAccess", () => {
  it("should keep one grant per account, the latest permission winning", async () => {
    const dataset = await newDataset();

    await grantAccess(env.DB, dataset.id, other.accountId, "read", NOW);
    await grantAccess(env.DB, dataset.id, other.accountId, "write", LATER);

    expect(await grantsOf(dataset.id)).toEqual([{ accountId: other.accountId, permission: "write" }]);
    expect((await findDataset(env.DB, other, owner.accountName, dataset.name))?.access).toBe("write");
  });

  it("should revoke a grant, and say false when there was none", async () => {
    const dataset = await newDataset();
    await grantAccess(env.DB, dataset.id, other.accountId, "read", NOW);

    expect(await revokeAccess(env.DB, dataset.id, other.accountId)).toBe(true);
    expect(await revokeAccess(env.DB, dataset.id, other.accountId)).toBe(false);
    expect((await findDataset(env.DB, other, owner.accountName, dataset.name))?.access).toBe("none");
  });
});

describe("findAccountId", () => {
  it("should find an account by its exact name only", async () => {
    expect(await findAccountId(env.DB, owner.accountName)).toBe(owner.accountId);
    expect(await findAccountId(env.DB, owner.accountName.toUpperCase())).toBeNull();
    expect(await findAccountId(env.DB, "nobody-here")).toBeNull();
  });
});

describe("commitDataItemVersion", () => {
  it("should make the first version current and stop listing its object as an orphan", async () => {
    const dataset = await newDataset();
    const v1 = version(dataset, "a.csv", "v1");
    await env.DB.prepare(
      "INSERT INTO orphan_objects (object_key, reason, delete_after) VALUES (?, 'upload in progress', ?)",
    )
      .bind(v1.objectKey, LATER)
      .run();

    await commitDataItemVersion(env.DB, v1, NOW, GRACE_OVER);

    expect(await findDataItem(env.DB, dataset.id, "a.csv")).toMatchObject({
      version: "v1",
      objectKey: v1.objectKey,
      rowCount: 2,
      schema: '{"tag":"v1"}',
      uploadedAt: NOW,
    });
    expect(await orphansUnder(`data/${dataset.id}/`)).toEqual([]);
  });

  it("should replace the current version in place and list the replaced object with the grace time", async () => {
    const dataset = await newDataset();
    await commitDataItemVersion(env.DB, version(dataset, "a.csv", "v1"), NOW, GRACE_OVER);
    const first = await findDataItem(env.DB, dataset.id, "a.csv");

    await commitDataItemVersion(env.DB, version(dataset, "a.csv", "v2"), LATER, GRACE_OVER);

    const second = await findDataItem(env.DB, dataset.id, "a.csv");
    expect(second).toMatchObject({
      id: first!.id,
      version: "v2",
      objectKey: `data/${dataset.id}/v2`,
      uploadedAt: LATER,
    });
    expect(await orphansUnder(`data/${dataset.id}/`)).toEqual([
      { objectKey: `data/${dataset.id}/v1`, reason: "replaced by a new version", deleteAfter: GRACE_OVER },
    ]);
    expect((await findDataset(env.DB, owner, owner.accountName, dataset.name))?.dataset.updatedAt).toBe(LATER);
  });
});

describe("listDataItems", () => {
  it("should list a dataset's items by name and nothing of other datasets", async () => {
    const dataset = await newDataset();
    const elsewhere = await newDataset();
    for (const name of ["b.csv", "a.csv", "B.csv"])
      await commitDataItemVersion(env.DB, version(dataset, name, `v-${name}`), NOW, GRACE_OVER);
    await commitDataItemVersion(env.DB, version(elsewhere, "z.csv", "v-z"), NOW, GRACE_OVER);

    expect((await listDataItems(env.DB, dataset.id)).map((item) => item.name)).toEqual(["B.csv", "a.csv", "b.csv"]);
  });
});

describe("deleteDataItem", () => {
  it("should delete the item and list its object as an orphan", async () => {
    const dataset = await newDataset();
    await commitDataItemVersion(env.DB, version(dataset, "a.csv", "v1"), NOW, GRACE_OVER);
    await commitDataItemVersion(env.DB, version(dataset, "b.csv", "v2"), NOW, GRACE_OVER);

    expect(await deleteDataItem(env.DB, dataset.id, "a.csv", GRACE_OVER)).toBe(true);

    expect((await listDataItems(env.DB, dataset.id)).map((item) => item.name)).toEqual(["b.csv"]);
    expect(await orphansUnder(`data/${dataset.id}/`)).toEqual([
      { objectKey: `data/${dataset.id}/v1`, reason: "data item deleted", deleteAfter: GRACE_OVER },
    ]);
  });

  it("should say false and list nothing for an item that does not exist", async () => {
    const dataset = await newDataset();

    expect(await deleteDataItem(env.DB, dataset.id, "none.csv", GRACE_OVER)).toBe(false);

    expect(await orphansUnder(`data/${dataset.id}/`)).toEqual([]);
  });
});

describe("deleteDataset", () => {
  it("should delete the dataset, its items and grants, and list every object as an orphan", async () => {
    const dataset = await newDataset();
    await commitDataItemVersion(env.DB, version(dataset, "a.csv", "v1"), NOW, GRACE_OVER);
    await commitDataItemVersion(env.DB, version(dataset, "a.csv", "v2"), NOW, LATER);
    await commitDataItemVersion(env.DB, version(dataset, "b.csv", "v3"), NOW, GRACE_OVER);
    await grantAccess(env.DB, dataset.id, other.accountId, "read", NOW);

    await deleteDataset(env.DB, dataset, GRACE_OVER);

    expect(await findDataset(env.DB, owner, owner.accountName, dataset.name)).toBeNull();
    expect((await listDataItems(env.DB, dataset.id)).map((item) => item.name)).toEqual([]);
    expect(await grantsOf(dataset.id)).toEqual([]);
    expect(await orphansUnder(`data/${dataset.id}/`)).toEqual([
      { objectKey: `data/${dataset.id}/v1`, reason: "replaced by a new version", deleteAfter: LATER },
      { objectKey: `data/${dataset.id}/v2`, reason: "dataset deleted", deleteAfter: GRACE_OVER },
      { objectKey: `data/${dataset.id}/v3`, reason: "dataset deleted", deleteAfter: GRACE_OVER },
    ]);
  });

  it("should leave the account's other datasets alone", async () => {
    const doomed = await newDataset();
    const kept = await newDataset();
    await commitDataItemVersion(env.DB, version(kept, "a.csv", "v1"), NOW, GRACE_OVER);

    await deleteDataset(env.DB, doomed, GRACE_OVER);

    expect((await listDataItems(env.DB, kept.id)).map((item) => item.name)).toEqual(["a.csv"]);
    expect(await orphansUnder(`data/${kept.id}/`)).toEqual([]);
  });
});
