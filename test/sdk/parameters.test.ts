import { beforeAll, describe, expect, it } from "vitest";
import { DqsApiError, type DqsClient } from "../../src/sdk";
import { loggedInClient } from "./support";

const CSV = "id,region,amount\n1,north,10.5\n2,south,3\n3,north,7\n";

let client: DqsClient;
let table: string;

beforeAll(async () => {
  const loggedIn = await loggedInClient("sdk-p");
  client = loggedIn.client;
  await client.createDataset(loggedIn.account, "d");
  await client.upload(loggedIn.account, "d", "sales", CSV);
  table = `"${loggedIn.account}".d.sales`;
});

describe("query() with parameters", () => {
  it("should bind named and positional parameters and echo them in the status", async () => {
    const named = await client.query(`SELECT id FROM ${table} WHERE region = :region AND amount > :min ORDER BY id`, {
      parameters: { region: "north", min: 5 },
    });
    const positional = await client.query(`SELECT ? AS label, count(*) AS n FROM ${table} WHERE id >= ?`, {
      parameters: ["from two", 2],
    });

    expect(named.rows).toEqual([{ id: 1 }, { id: 3 }]);
    expect(named.status.Parameters).toEqual({ region: "north", min: 5 });
    expect(positional.rows).toEqual([{ label: "from two", n: 2 }]);
  });

  it("should reject a placeholder without a value with the service's 400", async () => {
    const error = await client.query(`SELECT * FROM ${table} WHERE id = :id`).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({
      code: 400,
      message: "The placeholder :id has no value: the request has no Parameters.",
    });
  });
});

describe("validate()", () => {
  it("should describe a valid query without running it", async () => {
    const before = (await client.listQueries({ limit: 100 })).queries.length;

    const validation = await client.validate(`SELECT region, amount * :k AS scaled FROM ${table}`, {
      parameters: { k: 2 },
    });

    expect(validation).toMatchObject({
      Valid: true,
      Columns: [
        { Name: "region", DataType: "STRING" },
        { Name: "scaled", DataType: null },
      ],
      DataItems: [{ DataName: "sales", Bytes: CSV.length }],
      Engine: "sqljs",
    });
    expect((await client.listQueries({ limit: 100 })).queries.length).toBe(before);
  });

  it("should answer Valid false with the reason", async () => {
    const validation = await client.validate(`SELECT nope FROM ${table}`);

    expect(validation).toMatchObject({ Valid: false, Message: "Failed: no such column: nope.", Columns: [] });
  });
});
