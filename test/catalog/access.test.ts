import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  accessOf,
  canRead,
  canWrite,
  findDataset,
  findReadableDataItem,
  listCatalogColumns,
  listVisibleDatasets,
  type Access,
} from "../../src/worker/catalog/access";
import { findOrCreateUser, type UserRecord } from "../../src/worker/catalog/accounts";
import { commitDataItemVersion, grantAccess, putDataset } from "../../src/worker/catalog/datasets";
import {
  columnsOf,
  createDataset,
  datasetId,
  downloadLocation,
  followDownload,
  grant,
  schemaOf,
  uniqueName,
  upload,
  uploadOk,
} from "../support/catalog";
import { call, readEnvelope } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";

const ITEM = "id,name\n1,one\n2,two\n";
const REPLACEMENT = "id,name\n9,nine\n";

type Role = "owner" | "reader" | "writer" | "stranger";
type Visibility = "private" | "public";
type Need = "read" | "write" | "owner";

const callers = {} as Record<Role | "bystander", LoggedIn>;

beforeAll(async () => {
  callers.owner = await login("acm-owner");
  callers.reader = await login("acm-reader");
  callers.writer = await login("acm-writer");
  callers.stranger = await login("acm-stranger");
  callers.bystander = await login("acm-bystander");
});

/** A dataset of the owner with item.csv, a read grant for the reader and a write grant for the writer. */
async function sharedDataset(visibility: Visibility): Promise<string> {
  const { owner, reader, writer } = callers;
  const name = uniqueName(visibility);
  await createDataset(owner.accessToken, owner.accountName, name, { Visibility: visibility });
  await uploadOk(owner.accessToken, `${owner.accountName}/${name}/item.csv`, ITEM);
  await readEnvelope(await grant(owner.accessToken, owner.accountName, name, reader.accountName, "read"), 200);
  await readEnvelope(await grant(owner.accessToken, owner.accountName, name, writer.accountName, "write"), 200);
  return name;
}

function get(caller: LoggedIn, path: string): Promise<Response> {
  return call(path, { headers: authHeader(caller.accessToken) });
}

function remove(caller: LoggedIn, path: string): Promise<Response> {
  return call(path, { method: "DELETE", headers: authHeader(caller.accessToken) });
}

async function grantCount(dataset: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM grants WHERE dataset_id = ?")
    .bind(await datasetId(callers.owner.accountName, dataset))
    .first<{ n: number }>();
  return row!.n;
}

async function ownerItemText(dataset: string): Promise<string> {
  const location = await downloadLocation(
    callers.owner.accessToken,
    `${callers.owner.accountName}/${dataset}/item.csv`,
  );
  return (await followDownload(location)).text();
}

interface Operation {
  name: string;
  needs: Need;
  run(caller: LoggedIn, dataset: string): Promise<Response>;
  /** Checks what a caller allowed to run the operation gets, and what it changed. */
  succeeded(response: Response, dataset: string): Promise<void>;
}

const account = () => callers.owner.accountName;

const OPERATIONS: Operation[] = [
  {
    name: "list the data of",
    needs: "read",
    run: (caller, dataset) => get(caller, `/v1/dataset/${account()}/${dataset}/data`),
    async succeeded(response, dataset) {
      const body = await readEnvelope<{ DataCount: number; DataList: unknown[] }>(response, 200);
      expect(body.Data).toEqual({
        DataCount: 1,
        DataList: [expect.objectContaining({ AccountName: account(), DatasetName: dataset, DataName: "item.csv" })],
      });
    },
  },
  {
    name: "download from",
    needs: "read",
    run: (caller, dataset) => get(caller, `/v1/data/${account()}/${dataset}/item.csv/rawdata`),
    async succeeded(response) {
      expect(response.status).toBe(302);
      expect(await (await followDownload(response.headers.get("location") ?? "")).text()).toBe(ITEM);
    },
  },
  {
    name: "read a schema in",
    needs: "read",
    run: (caller, dataset) => get(caller, `/v1/data/${account()}/${dataset}/item.csv/metadata/schema`),
    async succeeded(response) {
      const body = await readEnvelope<{ Schema: string }>(response, 200);
      expect(body.Data.Schema).toContain('"Name":"id"');
      expect(body.Data.Schema).toContain('"DeliveryType":"RAW"');
    },
  },
  {
    name: "read how an item is stored in",
    needs: "read",
    run: (caller, dataset) => get(caller, `/v1/data/${account()}/${dataset}/item.csv/metadata/storage`),
    async succeeded(response) {
      const body = await readEnvelope<{ Size: number; RowCount: number; QueryReady: boolean }>(response, 200);
      expect(body.Data).toMatchObject({
        Size: ITEM.length,
        RowCount: 2,
        QueryReady: false,
        UploadedBy: callers.owner.accountName,
      });
    },
  },
  {
    name: "upload to",
    needs: "write",
    run: (caller, dataset) => upload(caller.accessToken, `${account()}/${dataset}/item.csv`, REPLACEMENT),
    async succeeded(response, dataset) {
      await readEnvelope(response, 200);
      expect(await ownerItemText(dataset)).toBe(REPLACEMENT);
    },
  },
  {
    name: "delete an item of",
    needs: "write",
    run: (caller, dataset) => remove(caller, `/v1/data/${account()}/${dataset}/item.csv`),
    async succeeded(response, dataset) {
      const body = await readEnvelope(response, 200);
      expect(body.Status.Message).toBe(`Data ${account()}/${dataset}/item.csv deleted`);
      await readEnvelope(await get(callers.owner, `/v1/data/${account()}/${dataset}/item.csv/rawdata`), 404);
    },
  },
  {
    name: "delete",
    needs: "owner",
    run: (caller, dataset) => remove(caller, `/v1/dataset/${account()}/${dataset}`),
    async succeeded(response, dataset) {
      await readEnvelope(response, 200);
      await readEnvelope(await get(callers.owner, `/v1/dataset/${account()}/${dataset}/data`), 404);
    },
  },
  {
    name: "list the grants of",
    needs: "owner",
    run: (caller, dataset) => get(caller, `/v1/dataset/${account()}/${dataset}/grants`),
    async succeeded(response) {
      const body = await readEnvelope<{ GrantList: { AccountName: string; Permission: string }[] }>(response, 200);
      expect(body.Data.GrantList.map((g) => `${g.AccountName}:${g.Permission}`)).toEqual([
        `${callers.reader.accountName}:read`,
        `${callers.writer.accountName}:write`,
      ]);
    },
  },
  {
    name: "grant access to",
    needs: "owner",
    run: (caller, dataset) => grant(caller.accessToken, account(), dataset, callers.bystander.accountName, "write"),
    async succeeded(response, dataset) {
      await readEnvelope(response, 200);
      await uploadOk(callers.bystander.accessToken, `${account()}/${dataset}/other.csv`, ITEM);
    },
  },
  {
    name: "revoke access to",
    needs: "owner",
    run: (caller, dataset) =>
      remove(caller, `/v1/dataset/${account()}/${dataset}/grants/${callers.writer.accountName}`),
    async succeeded(response, dataset) {
      await readEnvelope(response, 200);
      await readEnvelope(
        await upload(callers.writer.accessToken, `${account()}/${dataset}/item.csv`, REPLACEMENT),
        404,
      );
    },
  },
];

function allowed(role: Role, visibility: Visibility, needs: Need): boolean {
  if (role === "owner") return true;
  if (needs === "owner") return false;
  if (needs === "write") return role === "writer";
  return role !== "stranger" || visibility === "public";
}

const CASES = (["private", "public"] as const).flatMap((visibility) =>
  (["owner", "reader", "writer", "stranger"] as const).flatMap((role) =>
    OPERATIONS.map((operation) => ({
      role,
      visibility,
      operation,
      verb: operation.name,
      outcome: allowed(role, visibility, operation.needs) ? "succeed" : "answer 404 as for a missing dataset",
    })),
  ),
);

describe("who may do what with a dataset (docs/api.md)", () => {
  it.each(CASES)(
    "should $outcome when the $role tries to $verb a $visibility dataset",
    async ({ role, visibility, operation }) => {
      const dataset = await sharedDataset(visibility);
      const caller = callers[role];

      const response = await operation.run(caller, dataset);

      if (allowed(role, visibility, operation.needs)) {
        await operation.succeeded(response, dataset);
        return;
      }
      const missing = uniqueName("missing");
      const refused = await readEnvelope(response, 404);
      const absent = await readEnvelope(await operation.run(caller, missing), 404);
      expect(refused).toEqual({ Status: { Code: 404, Message: absent.Status.Message.replace(missing, dataset) } });
      expect(await ownerItemText(dataset)).toBe(ITEM);
      expect(await grantCount(dataset)).toBe(2);
    },
  );

  it("should answer a stranger asking for a missing item of a private dataset exactly like one of a missing dataset", async () => {
    const dataset = await sharedDataset("private");
    const missing = uniqueName("missing");
    const { stranger } = callers;

    const existing = await readEnvelope(await get(stranger, `/v1/data/${account()}/${dataset}/item.csv/rawdata`), 404);
    const absentItem = await readEnvelope(
      await get(stranger, `/v1/data/${account()}/${dataset}/none.csv/rawdata`),
      404,
    );
    const absentDataset = await readEnvelope(
      await get(stranger, `/v1/data/${account()}/${missing}/item.csv/rawdata`),
      404,
    );

    expect(absentItem.Status.Message.replace("none.csv", "item.csv")).toBe(existing.Status.Message);
    expect(absentDataset.Status.Message.replace(missing, dataset)).toBe(existing.Status.Message);
  });

  it("should let a grantee see the schema the owner sees", async () => {
    const dataset = await sharedDataset("private");
    const path = `${account()}/${dataset}/item.csv`;

    const asReader = await schemaOf(callers.reader.accessToken, path);

    expect(asReader).toEqual(await schemaOf(callers.owner.accessToken, path));
    expect(columnsOf(asReader)).toEqual(["id:INTEGER", "name:STRING"]);
  });
});

describe("accessOf", () => {
  const viewer = { accountId: "viewer" };

  it.each<[string, string, string | null, Access]>([
    ["viewer", "private", null, "owner"],
    ["viewer", "public", "read", "owner"],
    ["other", "private", "write", "write"],
    ["other", "public", "write", "write"],
    ["other", "private", "read", "read"],
    ["other", "public", null, "read"],
    ["other", "private", null, "none"],
  ])("should give an account %s's %s dataset with grant %s the access %s", (owner, visibility, grantName, expected) => {
    expect(accessOf(viewer, { accountId: owner, visibility }, grantName)).toBe(expected);
  });

  it.each<[Access, boolean, boolean]>([
    ["none", false, false],
    ["read", true, false],
    ["write", true, true],
    ["owner", true, true],
  ])("should let %s read: %s, write: %s", (access, read, write) => {
    expect([canRead(access), canWrite(access)]).toEqual([read, write]);
  });
});

describe("catalog lookups", () => {
  const NOW = "2026-11-22T08:00:00Z";
  let owner: UserRecord;
  let reader: UserRecord;
  let stranger: UserRecord;

  beforeAll(async () => {
    const user = (name: string) =>
      findOrCreateUser(env.DB, { issuer: "https://idp.example.test", subject: name, preferredUsername: name }, NOW);
    owner = await user("lk-owner");
    reader = await user("lk-reader");
    stranger = await user("lk-stranger");
    await putDataset(env.DB, owner.accountId, "hidden", {}, NOW);
    await putDataset(env.DB, owner.accountId, "open", { visibility: "public" }, NOW);
    await putDataset(env.DB, owner.accountId, "shared", {}, NOW);
    const shared = await findDataset(env.DB, owner, "lk-owner", "shared");
    await grantAccess(env.DB, shared!.dataset.id, reader.accountId, "read", NOW);
    for (const name of ["hidden", "open"]) {
      const found = await findDataset(env.DB, owner, "lk-owner", name);
      await commitDataItemVersion(
        env.DB,
        {
          datasetId: found!.dataset.id,
          name: "item.csv",
          version: `v-${name}`,
          objectKey: `data/${found!.dataset.id}/v-${name}`,
          size: 4,
          rowCount: 1,
          schema: "{}",
          deliveryType: "RAW",
          contentHash: "00",
          uploadedBy: owner.userId,
        },
        NOW,
        NOW,
      );
    }
  });

  it("should find a dataset with the caller's access to it", async () => {
    expect((await findDataset(env.DB, owner, "lk-owner", "hidden"))?.access).toBe("owner");
    expect((await findDataset(env.DB, reader, "lk-owner", "shared"))?.access).toBe("read");
    expect((await findDataset(env.DB, stranger, "lk-owner", "open"))?.access).toBe("read");
    expect((await findDataset(env.DB, stranger, "lk-owner", "hidden"))?.access).toBe("none");
  });

  it("should find no dataset under a name that breaks the rules, even if such a row exists", async () => {
    await env.DB.prepare(
      "INSERT INTO datasets (id, account_id, name, visibility, created_at, updated_at) VALUES (?, ?, 'bad.name', 'public', ?, ?)",
    )
      .bind(crypto.randomUUID(), stranger.accountId, NOW, NOW)
      .run();

    expect(await findDataset(env.DB, stranger, "lk-stranger", "bad.name")).toBeNull();
    expect(await findDataset(env.DB, owner, "lk owner", "hidden")).toBeNull();
  });

  it("should find names case-sensitively", async () => {
    expect(await findDataset(env.DB, owner, "lk-owner", "Hidden")).toBeNull();
    expect(await findDataset(env.DB, owner, "LK-OWNER", "hidden")).toBeNull();
  });

  it("should give a readable data item only to those who see its dataset", async () => {
    expect((await findReadableDataItem(env.DB, owner, "lk-owner", "hidden", "item.csv"))?.item.version).toBe(
      "v-hidden",
    );
    expect((await findReadableDataItem(env.DB, stranger, "lk-owner", "open", "item.csv"))?.item.version).toBe("v-open");
    expect(await findReadableDataItem(env.DB, stranger, "lk-owner", "hidden", "item.csv")).toBeNull();
    expect(await findReadableDataItem(env.DB, owner, "lk-owner", "hidden", "other.csv")).toBeNull();
    expect(await findReadableDataItem(env.DB, owner, "lk-owner", "hidden", ".item.csv")).toBeNull();
  });

  it("should list the datasets each caller sees, by name", async () => {
    const listed = async (viewer: UserRecord) =>
      (await listVisibleDatasets(env.DB, viewer, "lk-owner")).map((dataset) => dataset.name);

    expect(await listed(owner)).toEqual(["hidden", "open", "shared"]);
    expect(await listed(reader)).toEqual(["open", "shared"]);
    expect(await listed(stranger)).toEqual(["open"]);
    expect(await listVisibleDatasets(env.DB, owner, "lk owner")).toEqual([]);
    expect(await listVisibleDatasets(env.DB, owner, "nobody")).toEqual([]);
  });
});

describe("GET /v1/me/catalog", () => {
  interface Entry {
    AccountName: string;
    DatasetName: string;
    Visibility: string;
    Access: string;
    Shared: boolean;
    DataCount: number;
  }

  async function catalogOf(caller: LoggedIn, dataset: string): Promise<Entry | undefined> {
    const body = await readEnvelope<{ DatasetCount: number; DatasetList: Entry[] }>(
      await get(caller, "/v1/me/catalog"),
      200,
    );
    expect(body.Data.DatasetCount).toBe(body.Data.DatasetList.length);
    return body.Data.DatasetList.find((entry) => entry.DatasetName === dataset);
  }

  it("should show each caller its own, shared and public datasets with its access and the item count", async () => {
    const hidden = await sharedDataset("private");
    const open = await sharedDataset("public");
    const { owner, reader, writer, stranger } = callers;
    const entry = (visibility: string, access: string, shared: boolean) => ({
      AccountName: owner.accountName,
      Visibility: visibility,
      Access: access,
      Shared: shared,
      DataCount: 1,
    });

    expect(await catalogOf(owner, hidden)).toMatchObject(entry("private", "owner", false));
    expect(await catalogOf(reader, hidden)).toMatchObject(entry("private", "read", true));
    expect(await catalogOf(writer, hidden)).toMatchObject(entry("private", "write", true));
    expect(await catalogOf(stranger, hidden)).toBeUndefined();
    expect(await catalogOf(stranger, open)).toMatchObject(entry("public", "read", false));
    expect(await catalogOf(writer, open)).toMatchObject(entry("public", "write", true));
  });

  it("should drop a private dataset from a grantee's catalog once the grant is revoked", async () => {
    const hidden = await sharedDataset("private");
    const { owner, reader } = callers;

    await readEnvelope(
      await call(`/v1/dataset/${owner.accountName}/${hidden}/grants/${reader.accountName}`, {
        method: "DELETE",
        headers: authHeader(owner.accessToken),
      }),
      200,
    );

    expect(await catalogOf(reader, hidden)).toBeUndefined();
  });
});

describe("GET /v1/me/catalog/columns", () => {
  interface ItemColumns {
    AccountName: string;
    DatasetName: string;
    DataName: string;
    Columns: string[];
  }

  async function columnsOf(caller: LoggedIn, dataset: string): Promise<ItemColumns[]> {
    const body = await readEnvelope<{ ItemCount: number; Truncated: boolean; ItemList: ItemColumns[] }>(
      await get(caller, "/v1/me/catalog/columns"),
      200,
    );
    expect(body.Data.ItemCount).toBe(body.Data.ItemList.length);
    expect(body.Data.Truncated).toBe(false);
    return body.Data.ItemList.filter((item) => item.DatasetName === dataset);
  }

  it("should list every item the caller sees with its columns in order, and nothing of another's private dataset", async () => {
    const hidden = await sharedDataset("private");
    const open = await sharedDataset("public");
    const { owner, reader, stranger } = callers;
    await uploadOk(owner.accessToken, `${owner.accountName}/${hidden}/a.csv`, "z,y,x\n1,2,3\n");
    const item = (dataset: string, dataName: string, columns: string[]) => ({
      AccountName: owner.accountName,
      DatasetName: dataset,
      DataName: dataName,
      Columns: columns,
    });

    const expected = [item(hidden, "a.csv", ["z", "y", "x"]), item(hidden, "item.csv", ["id", "name"])];
    expect(await columnsOf(owner, hidden)).toEqual(expected);
    expect(await columnsOf(reader, hidden)).toEqual(expected);
    expect(await columnsOf(stranger, hidden)).toEqual([]);
    expect(await columnsOf(stranger, open)).toEqual([item(open, "item.csv", ["id", "name"])]);
  });

  it("should stop at the most it lists, in the catalog's order, and say there were more", async () => {
    const dataset = await sharedDataset("private");
    const { owner } = callers;
    await uploadOk(owner.accessToken, `${owner.accountName}/${dataset}/a.csv`, ITEM);
    const account = await env.DB.prepare("SELECT id FROM accounts WHERE name = ?")
      .bind(owner.accountName)
      .first<{ id: string }>();
    const viewer = { accountId: account!.id };
    const all = await listCatalogColumns(env.DB, viewer, 10_000);

    const first = await listCatalogColumns(env.DB, viewer, 2);

    expect(all.truncated).toBe(false);
    expect(all.items.length).toBeGreaterThan(2);
    expect(first).toEqual({ items: all.items.slice(0, 2), truncated: true });
  });
});
