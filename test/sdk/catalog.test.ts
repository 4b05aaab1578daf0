import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { DqsApiError } from "../../src/sdk";
import { loggedInClient, recordingFetch } from "./support";

const CSV = "id,name,amount,day\n1,ann,10.5,2024-01-02\n2,bob,3,2024-02-03\n";

describe("me()", () => {
  it("should say which account and user the tokens act for, and the terms version accepted", async () => {
    const { client, account, tokens } = await loggedInClient("sdk-me");

    expect(await client.me()).toEqual({
      AccountName: account,
      UserId: decodeJwt(tokens.accessToken).sub,
      TermsVersion: env.TERMS_VERSION,
    });
  });
});

describe("datasets through the SDK", () => {
  it("should create a dataset once, then report that it exists", async () => {
    const { client, account } = await loggedInClient("sdk-ds");

    expect(await client.createDataset(account, "sales")).toEqual({
      created: true,
      message: `Dataset ${account}/sales created`,
    });
    expect((await client.createDataset(account, "sales", { Visibility: "public" })).created).toBe(false);
    expect(await client.myDatasets()).toEqual([{ AccountName: account, DatasetName: "sales" }]);
  });

  it("should share a dataset with a grant and take it back with a revoke", async () => {
    const owner = await loggedInClient("sdk-owner");
    const reader = await loggedInClient("sdk-reader");
    await owner.client.createDataset(owner.account, "shared");
    await owner.client.upload(owner.account, "shared", "orders.csv", CSV);
    expect(await reader.client.accountDatasets(owner.account)).toEqual([]);

    expect(await owner.client.grant(owner.account, "shared", reader.account, "read")).toContain(reader.account);
    expect(await reader.client.accountDatasets(owner.account)).toEqual([
      { AccountName: owner.account, DatasetName: "shared" },
    ]);
    expect(await reader.client.listData(owner.account, "shared")).toEqual([
      expect.objectContaining({ AccountName: owner.account, DatasetName: "shared", DataName: "orders.csv" }),
    ]);

    await owner.client.revoke(owner.account, "shared", reader.account);
    expect(await reader.client.accountDatasets(owner.account)).toEqual([]);
  });

  it("should delete a dataset with its data", async () => {
    const { client, account } = await loggedInClient("sdk-del");
    await client.createDataset(account, "tmp");
    await client.upload(account, "tmp", "a.csv", CSV);

    expect(await client.deleteDataset(account, "tmp")).toContain("deleted");
    expect(await client.myDatasets()).toEqual([]);
    await expect(client.listData(account, "tmp")).rejects.toMatchObject({ code: 404 });
  });
});

describe("data through the SDK", () => {
  it("should upload text, list it, and return its generated schema", async () => {
    const { client, account } = await loggedInClient("sdk-up");
    await client.createDataset(account, "d");

    const message = await client.upload(account, "d", "orders.csv", CSV);

    expect(message).toBe(`Registered ${account}/d/orders.csv: 2 rows, 4 columns, ${CSV.length} bytes.`);
    expect((await client.listData(account, "d")).map((item) => item.DataName)).toEqual(["orders.csv"]);
    const schema = await client.dataSchema(account, "d", "orders.csv");
    expect(schema.TableDefinition?.Columns.map((c) => [c.Name, c.DataType.DataType])).toEqual([
      ["id", "INTEGER"],
      ["name", "STRING"],
      ["amount", "DOUBLE"],
      ["day", "DATE"],
    ]);
    expect(schema.DataSpecification?.DeliveryType).toBe("RAW");
  });

  it("should stream an upload and report progress up to the file's size", async () => {
    const { client, account } = await loggedInClient("sdk-stream");
    await client.createDataset(account, "d");
    const bytes = new TextEncoder().encode(
      `id,text\n${Array.from({ length: 5000 }, (_, i) => `${i},row ${i}`).join("\n")}\n`,
    );
    const progress: [number, number | null][] = [];

    const message = await client.upload(account, "d", "big.csv", new Blob([bytes]).stream(), {
      size: bytes.byteLength,
      onProgress: (sent, total) => progress.push([sent, total]),
    });

    expect(message).toContain("5000 rows");
    expect(progress[0]).toEqual([0, bytes.byteLength]);
    expect(progress.at(-1)).toEqual([bytes.byteLength, bytes.byteLength]);
    const sent = progress.map(([n]) => n);
    expect(sent).toEqual([...sent].sort((a, b) => a - b));
  });

  it("should send a given schema and refuse a file that breaks it with the service's message", async () => {
    const { client, account } = await loggedInClient("sdk-schema");
    await client.createDataset(account, "d");
    const schema = {
      SchemaVersion: "1.0",
      TableDefinition: {
        Columns: [
          { Name: "id", DataType: { DataType: "INTEGER" } },
          { Name: "name", DataType: { DataType: "STRING" } },
        ],
      },
    };

    const error = await client
      .upload(account, "d", "bad.csv", "id,name\n1,a\nx,b\n", { schema })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({ code: 400, message: expect.stringMatching(/row 2.*id.*x/i) });
    expect(
      await client.upload(account, "d", "bad.csv", "id,name\nx,b\n", { schema, forceGenerateTableDefinition: true }),
    ).toContain("1 row,");
  });

  it("should follow the download redirect without sending the bearer token there", async () => {
    const { fetch, sent } = recordingFetch();
    const { client, account } = await loggedInClient("sdk-dl", { fetch });
    await client.createDataset(account, "d");
    await client.upload(account, "d", "orders.csv", CSV);
    sent.length = 0;

    const download = await client.download(account, "d", "orders.csv");

    expect(await new Response(download.body).text()).toBe(CSV);
    expect(download).toMatchObject({ size: CSV.length, filename: "orders.csv" });
    expect(sent.map((s) => [s.path.split("/")[1], s.status, s.authorization !== null])).toEqual([
      ["v1", 302, true],
      ["download", 200, false],
    ]);
  });

  it("should delete a data item, after which its download is a 404", async () => {
    const { client, account } = await loggedInClient("sdk-rm");
    await client.createDataset(account, "d");
    await client.upload(account, "d", "gone.csv", CSV);

    expect(await client.deleteData(account, "d", "gone.csv")).toContain("deleted");

    const error = await client.download(account, "d", "gone.csv").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({ code: 404, message: expect.stringContaining("not found") });
  });
});

describe("errors through the SDK", () => {
  it("should carry Status.Code, Status.Message and the request id of an error answer", async () => {
    const { client, account } = await loggedInClient("sdk-err");

    const error = (await client.dataSchema(account, "nope", "x.csv").catch((e: unknown) => e)) as DqsApiError;

    expect(error).toBeInstanceOf(DqsApiError);
    expect(error.code).toBe(404);
    expect(error.message).toBe(`Data ${account}/nope/x.csv not found, or you may not access it.`);
    expect(error.requestId).toEqual(expect.any(String));
  });

  it("should surface a 400 from the service as it is", async () => {
    const { client, account } = await loggedInClient("sdk-bad");

    await expect(client.createDataset(account, "bad name!")).rejects.toMatchObject({
      name: "DqsApiError",
      code: 400,
    });
  });
});
