import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ORPHAN_GRACE_SECONDS } from "../../src/worker/catalog/datasets";
import { runMaintenance } from "../../src/worker/maintenance/scheduled";
import {
  createDataset,
  datasetId,
  downloadLocation,
  followDownload,
  grant,
  objectKeys,
  orphansUnder,
  putDataset,
  uniqueName,
  upload,
  uploadOk,
} from "../support/catalog";
import { call, readEnvelope, readUnauthorized } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";

interface DatasetList {
  DatasetCount: number;
  DatasetList: { AccountName: string; DatasetName: string }[];
}

interface DataList {
  DataCount: number;
  DataList: ({ AccountName: string; DatasetName: string; DataName: string } & Record<string, unknown>)[];
}

let alice: LoggedIn;
let bob: LoggedIn;
let carol: LoggedIn;

beforeAll(async () => {
  alice = await login("dsr-alice");
  bob = await login("dsr-bob");
  carol = await login("dsr-carol");
});

afterEach(() => {
  vi.useRealTimers();
});

async function myDatasets(caller: LoggedIn): Promise<DatasetList> {
  return (
    await readEnvelope<DatasetList>(await call("/v1/me/datasets", { headers: authHeader(caller.accessToken) }), 200)
  ).Data;
}

async function accountDatasets(caller: LoggedIn, account: string): Promise<DatasetList> {
  return (
    await readEnvelope<DatasetList>(
      await call(`/v1/account/${account}/datasets`, { headers: authHeader(caller.accessToken) }),
      200,
    )
  ).Data;
}

function listData(caller: LoggedIn, account: string, dataset: string): Promise<Response> {
  return call(`/v1/dataset/${account}/${dataset}/data`, { headers: authHeader(caller.accessToken) });
}

function deleteDataset(caller: LoggedIn, account: string, dataset: string): Promise<Response> {
  return call(`/v1/dataset/${account}/${dataset}`, { method: "DELETE", headers: authHeader(caller.accessToken) });
}

function revoke(caller: LoggedIn, account: string, dataset: string, grantee: string): Promise<Response> {
  return call(`/v1/dataset/${account}/${dataset}/grants/${grantee}`, {
    method: "DELETE",
    headers: authHeader(caller.accessToken),
  });
}

function names(list: DatasetList): string[] {
  return list.DatasetList.map((item) => `${item.AccountName}/${item.DatasetName}`);
}

describe("GET /v1/me/datasets", () => {
  it("should list the caller's own datasets only, by name, with their count", async () => {
    const lister = await login("dsr-lister");
    await createDataset(lister.accessToken, lister.accountName, "zeta");
    await createDataset(lister.accessToken, lister.accountName, "alpha", { Visibility: "public" });
    const othersPublic = uniqueName("others-public");
    await createDataset(alice.accessToken, alice.accountName, othersPublic, { Visibility: "public" });
    const granted = uniqueName("granted");
    await createDataset(alice.accessToken, alice.accountName, granted);
    await readEnvelope(await grant(alice.accessToken, alice.accountName, granted, lister.accountName, "write"), 200);

    const list = await myDatasets(lister);

    expect(list).toEqual({
      DatasetCount: 2,
      DatasetList: [
        { AccountName: lister.accountName, DatasetName: "alpha" },
        { AccountName: lister.accountName, DatasetName: "zeta" },
      ],
    });
  });

  it("should require an access token", async () => {
    expect(await readUnauthorized(await call("/v1/me/datasets"))).toMatch(/Missing bearer token/);
  });
});

describe("GET /v1/account/{AccountName}/datasets", () => {
  it("should show each caller what it sees: the owner all, a grantee public and granted, a stranger public only", async () => {
    const owner = await login("dsr-shower");
    await createDataset(owner.accessToken, owner.accountName, "a-private");
    await createDataset(owner.accessToken, owner.accountName, "b-public", { Visibility: "public" });
    await createDataset(owner.accessToken, owner.accountName, "c-granted");
    await readEnvelope(await grant(owner.accessToken, owner.accountName, "c-granted", bob.accountName, "read"), 200);

    const asOwner = await accountDatasets(owner, owner.accountName);
    const asGrantee = await accountDatasets(bob, owner.accountName);
    const asStranger = await accountDatasets(carol, owner.accountName);

    const account = owner.accountName;
    expect(names(asOwner)).toEqual([`${account}/a-private`, `${account}/b-public`, `${account}/c-granted`]);
    expect(names(asGrantee)).toEqual([`${account}/b-public`, `${account}/c-granted`]);
    expect(names(asStranger)).toEqual([`${account}/b-public`]);
    for (const list of [asOwner, asGrantee, asStranger]) expect(list.DatasetCount).toBe(list.DatasetList.length);
  });

  it("should list the same datasets for the owner as /me/datasets", async () => {
    expect(await accountDatasets(alice, alice.accountName)).toEqual(await myDatasets(alice));
  });

  it("should answer an empty list for an account that does not exist", async () => {
    expect(await accountDatasets(alice, "no-such-account")).toEqual({ DatasetCount: 0, DatasetList: [] });
  });

  it.each(["bad.name", "x".repeat(65)])("should answer 404 for the invalid AccountName %s", async (account) => {
    const response = await call(`/v1/account/${account}/datasets`, { headers: authHeader(alice.accessToken) });
    const body = await readEnvelope(response, 404);
    expect(body.Status.Message).toContain("cannot exist");
  });

  it("should match account names case-sensitively", async () => {
    const name = uniqueName("case");
    await createDataset(alice.accessToken, alice.accountName, name, { Visibility: "public" });

    expect(await accountDatasets(bob, alice.accountName.toUpperCase())).toEqual({ DatasetCount: 0, DatasetList: [] });
    expect(names(await accountDatasets(bob, alice.accountName))).toContain(`${alice.accountName}/${name}`);
  });

  it("should require an access token", async () => {
    await readUnauthorized(await call(`/v1/account/${alice.accountName}/datasets`));
  });
});

describe("GET /v1/dataset/{AccountName}/{DatasetName}/data", () => {
  it("should list the dataset's data items by name with their count", async () => {
    const name = uniqueName("items");
    await createDataset(alice.accessToken, alice.accountName, name);
    for (const dataName of ["b.csv", "a.csv", "C.csv"])
      await uploadOk(alice.accessToken, `${alice.accountName}/${name}/${dataName}`, "x\n1\n");

    const body = await readEnvelope<DataList>(await listData(alice, alice.accountName, name), 200);

    expect(body.Data).toEqual({
      DataCount: 3,
      DataList: ["C.csv", "a.csv", "b.csv"].map((DataName) => ({
        AccountName: alice.accountName,
        DatasetName: name,
        DataName,
        Version: expect.any(String),
        Size: 4,
        RowCount: 1,
        UploadedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        QueryReady: false,
      })),
    });
  });

  it("should give each item's current version, size, rows and upload time, as its storage endpoint does", async () => {
    const name = uniqueName("figures");
    await createDataset(alice.accessToken, alice.accountName, name);
    await uploadOk(alice.accessToken, `${alice.accountName}/${name}/d.csv`, "x\n1\n");
    await uploadOk(alice.accessToken, `${alice.accountName}/${name}/d.csv`, "x,y\n1,2\n3,4\n5,6\n");

    const body = await readEnvelope<DataList>(await listData(alice, alice.accountName, name), 200);
    const storage = await readEnvelope<Record<string, unknown>>(
      await call(`/v1/data/${alice.accountName}/${name}/d.csv/metadata/storage`, {
        headers: authHeader(alice.accessToken),
      }),
      200,
    );

    const { Version, Size, RowCount, UploadedAt, QueryReady } = storage.Data!;
    expect(body.Data.DataList).toEqual([
      expect.objectContaining({ DataName: "d.csv", Version, Size, RowCount, UploadedAt, QueryReady }),
    ]);
    expect(RowCount).toBe(3);
  });

  it("should list an empty dataset with no items", async () => {
    const name = uniqueName("empty");
    await createDataset(alice.accessToken, alice.accountName, name);

    const body = await readEnvelope<DataList>(await listData(alice, alice.accountName, name), 200);

    expect(body.Data).toEqual({ DataCount: 0, DataList: [] });
  });

  it("should answer 404 for a dataset that does not exist", async () => {
    const body = await readEnvelope(await listData(alice, alice.accountName, "no-such-dataset"), 404);

    expect(body.Status.Message).toBe(
      `Dataset ${alice.accountName}/no-such-dataset not found, or you may not access it.`,
    );
  });

  it.each(["bad.name", "two%20words", "x".repeat(65)])(
    "should answer 404 like a missing dataset for the invalid DatasetName %s",
    async (datasetName) => {
      const body = await readEnvelope(await listData(alice, alice.accountName, datasetName), 404);

      expect(body.Status.Message).toBe(
        `Dataset ${alice.accountName}/${decodeURIComponent(datasetName)} not found, or you may not access it.`,
      );
    },
  );

  it("should answer 404 for an invalid AccountName", async () => {
    await readEnvelope(await listData(alice, "b@d", "sales"), 404);
  });

  it("should match dataset and account names case-sensitively", async () => {
    await createDataset(alice.accessToken, alice.accountName, "CaseSet");

    await readEnvelope(await listData(alice, alice.accountName, "CaseSet"), 200);
    await readEnvelope(await listData(alice, alice.accountName, "caseset"), 404);
    await readEnvelope(await listData(alice, alice.accountName.toUpperCase(), "CaseSet"), 404);
  });

  it("should require an access token", async () => {
    await readUnauthorized(await call(`/v1/dataset/${alice.accountName}/whatever/data`));
  });
});

describe("PUT /v1/dataset/{AccountName}/{DatasetName}", () => {
  it("should create a dataset with 201, then answer 200 to the same request", async () => {
    const name = uniqueName("put");

    const created = await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name), 201);
    const again = await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name), 200);

    expect(created.Status.Message).toBe(`Dataset ${alice.accountName}/${name} created`);
    expect(again.Status.Message).toBe(`Dataset ${alice.accountName}/${name} exists; settings applied`);
    expect(names(await myDatasets(alice)).filter((n) => n === `${alice.accountName}/${name}`)).toHaveLength(1);
  });

  it("should create a private dataset by default", async () => {
    const name = uniqueName("private");

    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name, {}), 201);

    await readEnvelope(await listData(bob, alice.accountName, name), 404);
    expect(names(await accountDatasets(bob, alice.accountName))).not.toContain(`${alice.accountName}/${name}`);
  });

  it("should make a dataset public and private again", async () => {
    const name = uniqueName("flip");
    await createDataset(alice.accessToken, alice.accountName, name);

    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name, { Visibility: "public" }), 200);
    const whilePublic = await listData(bob, alice.accountName, name);
    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name, { Visibility: "private" }), 200);
    const whilePrivate = await listData(bob, alice.accountName, name);

    await readEnvelope(whilePublic, 200);
    await readEnvelope(whilePrivate, 404);
  });

  it("should change the description and leave visibility as it was when the body does not name it", async () => {
    const name = uniqueName("describe");
    await createDataset(alice.accessToken, alice.accountName, name, { Visibility: "public", Description: "first" });

    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name, { Description: "second" }), 200);
    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name), 200);

    const row = await env.DB.prepare("SELECT visibility, description FROM datasets WHERE id = ?")
      .bind(await datasetId(alice.accountName, name))
      .first();
    expect(row).toEqual({ visibility: "public", description: "second" });
    await readEnvelope(await listData(bob, alice.accountName, name), 200);
  });

  it("should treat an empty body with a JSON content type as no settings", async () => {
    const name = uniqueName("empty");
    const response = await call(`/v1/dataset/${alice.accountName}/${name}`, {
      method: "PUT",
      headers: { ...authHeader(alice.accessToken), "content-type": "application/json" },
      body: "",
    });
    await readEnvelope(response, 201);
  });

  it("should answer 400 for malformed JSON", async () => {
    const body = await readEnvelope(
      await putDataset(alice.accessToken, alice.accountName, uniqueName("json"), '{"Visibility": '),
      400,
    );

    expect(body.Status.Message).toBe("Malformed JSON in request body.");
  });

  it("should answer 400 naming an unknown field, and create nothing", async () => {
    const name = uniqueName("unknown");

    const body = await readEnvelope(
      await putDataset(alice.accessToken, alice.accountName, name, '{"Visiblity": "public"}'),
      400,
    );

    expect(body.Status.Message).toBe('Invalid dataset settings: body: Unrecognized key: "Visiblity".');
    await readEnvelope(await listData(alice, alice.accountName, name), 404);
  });

  it.each([
    ['{"Visibility": "secret"}', "Visibility"],
    ['{"Description": 42}', "Description"],
    ["[]", "body"],
    ['"public"', "body"],
  ])("should answer 400 for the settings %s, naming %s", async (settings, field) => {
    const body = await readEnvelope(
      await putDataset(alice.accessToken, alice.accountName, uniqueName("bad"), settings),
      400,
    );

    expect(body.Status.Message).toContain(`Invalid dataset settings: ${field}: `);
  });

  it("should answer 404 for a dataset under someone else's account, like a dataset that does not exist", async () => {
    const name = uniqueName("foreign");

    const response = await putDataset(bob.accessToken, alice.accountName, name);

    const body = await readEnvelope(response, 404);
    const missing = await readEnvelope(await listData(bob, alice.accountName, name), 404);
    expect(body.Status.Message).toBe(missing.Status.Message);
    expect(names(await myDatasets(alice))).not.toContain(`${alice.accountName}/${name}`);
  });

  it("should answer 404 for an existing dataset of someone else, and change nothing", async () => {
    const name = uniqueName("theirs");
    await createDataset(alice.accessToken, alice.accountName, name);

    await readEnvelope(await putDataset(bob.accessToken, alice.accountName, name, { Visibility: "public" }), 404);

    await readEnvelope(await listData(bob, alice.accountName, name), 404);
  });

  it.each([
    ["bad.name", "DatasetName 'bad.name' is invalid: use 1-64 characters of A-Z, a-z, 0-9, '_' and '-'."],
    ["two%20words", "DatasetName 'two words' is invalid: use 1-64 characters of A-Z, a-z, 0-9, '_' and '-'."],
    ["x".repeat(65), `DatasetName '${"x".repeat(65)}' is invalid: use 1-64 characters of A-Z, a-z, 0-9, '_' and '-'.`],
  ])("should answer 400 naming the rule for the DatasetName %s", async (name, message) => {
    const body = await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name), 400);

    expect(body.Status.Message).toBe(message);
  });

  it("should answer 400 naming the rule for an invalid AccountName", async () => {
    const body = await readEnvelope(await putDataset(alice.accessToken, "b@d", "sales"), 400);

    expect(body.Status.Message).toBe(
      "AccountName 'b@d' is invalid: use 1-64 characters of A-Z, a-z, 0-9, '_' and '-'.",
    );
  });

  it("should accept a 64-character name", async () => {
    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, `A_b-${"9".repeat(60)}`), 201);
  });

  it("should keep datasets whose names differ only in letter case apart", async () => {
    const name = uniqueName("Sales");
    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name), 201);

    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name.toLowerCase()), 201);
    await uploadOk(alice.accessToken, `${alice.accountName}/${name}/only-here.csv`, "x\n1\n");

    const upper = await readEnvelope<DataList>(await listData(alice, alice.accountName, name), 200);
    const lower = await readEnvelope<DataList>(await listData(alice, alice.accountName, name.toLowerCase()), 200);
    expect(upper.Data.DataCount).toBe(1);
    expect(lower.Data.DataCount).toBe(0);
  });

  it("should require an access token", async () => {
    await readUnauthorized(await call(`/v1/dataset/${alice.accountName}/x`, { method: "PUT" }));
  });
});

describe("DELETE /v1/dataset/{AccountName}/{DatasetName}", () => {
  it("should delete the dataset with its data, and list its objects for the sweep, which removes them", async () => {
    const name = uniqueName("doomed");
    await createDataset(alice.accessToken, alice.accountName, name);
    const path = `${alice.accountName}/${name}`;
    await uploadOk(alice.accessToken, `${path}/one.csv`, "x\n1\n");
    await uploadOk(alice.accessToken, `${path}/two.csv`, "y\n2\n");
    const location = await downloadLocation(alice.accessToken, `${path}/one.csv`);
    const prefix = `data/${await datasetId(alice.accountName, name)}/`;
    const keys = await objectKeys(prefix);
    expect(keys).toHaveLength(2);

    const body = await readEnvelope(await deleteDataset(alice, alice.accountName, name), 200);

    expect(body.Status.Message).toBe(`Dataset ${path} deleted`);
    await readEnvelope(await listData(alice, alice.accountName, name), 404);
    await readEnvelope(await call(`/v1/data/${path}/one.csv/rawdata`, { headers: authHeader(alice.accessToken) }), 404);
    await readEnvelope(
      await call(`/v1/data/${path}/two.csv/metadata/schema`, { headers: authHeader(alice.accessToken) }),
      404,
    );
    expect(names(await myDatasets(alice))).not.toContain(path);
    const orphans = await orphansUnder(prefix);
    expect(orphans.map((orphan) => [orphan.objectKey, orphan.reason])).toEqual(
      keys.map((key) => [key, "dataset deleted"]),
    );

    await runMaintenance(env);
    expect(await objectKeys(prefix)).toEqual(keys);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + (ORPHAN_GRACE_SECONDS + 1) * 1000);
    await runMaintenance(env);
    vi.useRealTimers();

    for (const key of keys) expect(await env.BUCKET.head(key)).toBeNull();
    expect(await orphansUnder(prefix)).toEqual([]);
    await readEnvelope(await followDownload(location), 404);
  });

  it("should let the owner create the same name again as a new, empty dataset", async () => {
    const name = uniqueName("reborn");
    await createDataset(alice.accessToken, alice.accountName, name, { Visibility: "public" });
    await uploadOk(alice.accessToken, `${alice.accountName}/${name}/a.csv`, "x\n1\n");
    await readEnvelope(await grant(alice.accessToken, alice.accountName, name, bob.accountName, "write"), 200);
    await readEnvelope(await deleteDataset(alice, alice.accountName, name), 200);

    await readEnvelope(await putDataset(alice.accessToken, alice.accountName, name), 201);

    const body = await readEnvelope<DataList>(await listData(alice, alice.accountName, name), 200);
    expect(body.Data.DataCount).toBe(0);
    await readEnvelope(await listData(bob, alice.accountName, name), 404);
  });

  it("should answer 404 for a dataset that does not exist", async () => {
    const body = await readEnvelope(await deleteDataset(alice, alice.accountName, "no-such-dataset"), 404);

    expect(body.Status.Message).toBe(
      `Dataset ${alice.accountName}/no-such-dataset not found, or you may not access it.`,
    );
  });

  it("should require an access token", async () => {
    await readUnauthorized(await call(`/v1/dataset/${alice.accountName}/x`, { method: "DELETE" }));
  });
});

describe("PUT and DELETE /v1/dataset/{AccountName}/{DatasetName}/grants/{Grantee}", () => {
  it("should let a read grantee see the dataset but not upload, and take it back on revoke", async () => {
    const name = uniqueName("shared");
    await createDataset(alice.accessToken, alice.accountName, name);
    await uploadOk(alice.accessToken, `${alice.accountName}/${name}/a.csv`, "x\n1\n");

    const granted = await readEnvelope(
      await grant(alice.accessToken, alice.accountName, name, bob.accountName, "read"),
      200,
    );

    expect(granted.Status.Message).toBe(`${bob.accountName} may now read ${alice.accountName}/${name}`);
    await readEnvelope(await listData(bob, alice.accountName, name), 200);
    await readEnvelope(await upload(bob.accessToken, `${alice.accountName}/${name}/b.csv`, "y\n2\n"), 404);

    const revoked = await readEnvelope(await revoke(alice, alice.accountName, name, bob.accountName), 200);

    expect(revoked.Status.Message).toBe(`${bob.accountName} no longer has access to ${alice.accountName}/${name}`);
    await readEnvelope(await listData(bob, alice.accountName, name), 404);
  });

  it("should replace a read grant with a write grant", async () => {
    const name = uniqueName("upgrade");
    await createDataset(alice.accessToken, alice.accountName, name);
    await readEnvelope(await grant(alice.accessToken, alice.accountName, name, bob.accountName, "read"), 200);

    await readEnvelope(await grant(alice.accessToken, alice.accountName, name, bob.accountName, "write"), 200);

    await uploadOk(bob.accessToken, `${alice.accountName}/${name}/b.csv`, "y\n2\n");
    const count = await env.DB.prepare("SELECT count(*) AS n FROM grants WHERE dataset_id = ?")
      .bind(await datasetId(alice.accountName, name))
      .first<{ n: number }>();
    expect(count!.n).toBe(1);
  });

  it("should answer 404 for a grantee account that does not exist", async () => {
    const name = uniqueName("nobody");
    await createDataset(alice.accessToken, alice.accountName, name);

    const body = await readEnvelope(
      await grant(alice.accessToken, alice.accountName, name, "no-such-user", "read"),
      404,
    );

    expect(body.Status.Message).toBe("Account no-such-user not found.");
  });

  it("should answer 400 for a grant to the owner", async () => {
    const name = uniqueName("self");
    await createDataset(alice.accessToken, alice.accountName, name);

    const body = await readEnvelope(
      await grant(alice.accessToken, alice.accountName, name, alice.accountName, "read"),
      400,
    );

    expect(body.Status.Message).toBe("The owner already has full access; grant to another account.");
  });

  it("should answer 400 for a permission other than read or write", async () => {
    const name = uniqueName("admin");
    await createDataset(alice.accessToken, alice.accountName, name);

    const body = await readEnvelope(
      await grant(alice.accessToken, alice.accountName, name, bob.accountName, "admin"),
      400,
    );

    expect(body.Status.Message).toMatch(/^Invalid request: Permission: /);
    await readEnvelope(await listData(bob, alice.accountName, name), 404);
  });

  it("should answer 400 naming the rule for an invalid grantee name", async () => {
    const name = uniqueName("badgrantee");
    await createDataset(alice.accessToken, alice.accountName, name);

    const body = await readEnvelope(await grant(alice.accessToken, alice.accountName, name, "b@d", "read"), 400);

    expect(body.Status.Message).toBe("Grantee 'b@d' is invalid: use 1-64 characters of A-Z, a-z, 0-9, '_' and '-'.");
  });

  it("should answer 404 when revoking a grant that does not exist", async () => {
    const name = uniqueName("nogrant");
    await createDataset(alice.accessToken, alice.accountName, name);

    const body = await readEnvelope(await revoke(alice, alice.accountName, name, bob.accountName), 404);

    expect(body.Status.Message).toBe(`${bob.accountName} holds no grant on ${alice.accountName}/${name}.`);
  });

  it("should not let a write grantee pass the grant on", async () => {
    const name = uniqueName("nopass");
    await createDataset(alice.accessToken, alice.accountName, name);
    await readEnvelope(await grant(alice.accessToken, alice.accountName, name, bob.accountName, "write"), 200);

    await readEnvelope(await grant(bob.accessToken, alice.accountName, name, carol.accountName, "read"), 404);

    await readEnvelope(await listData(carol, alice.accountName, name), 404);
  });
});
