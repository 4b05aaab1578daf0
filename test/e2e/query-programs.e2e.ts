import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DqsClient } from "../../src/sdk";
import { httpLogin } from "./support/http-login";
import { buildCli, runCli, temporaryHome, type CliResult } from "./support/cli-run";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// What a program does with the query API (issue 13) against `wrangler dev`,
// both Workers as deployed: a parameterized query and a validation, through
// the SDK and through the built `dqs` command line.

const ACCOUNT = "e2e-programs-pat";
const CSV = "id,region,amount\n1,north,10.5\n2,south,3\n3,north,7\n4,west,9007199254740993\n";
const TABLE = `"${ACCOUNT}".sales.orders`;

let server: DevServer;
let cli: string;
let home: string;
let sdk: DqsClient;

function dqs(args: string[], stdin?: string): Promise<CliResult> {
  return runCli(cli, args, { home, env: { DQS_URL: server.url }, stdin });
}

beforeAll(async () => {
  cli = buildCli();
  home = temporaryHome();
  server = await startWranglerDev();
  // Two logins: the CLI spends its refresh token when it logs in, the SDK keeps its own.
  const forSdk = await httpLogin(server.url, ACCOUNT);
  const hour = new Date(Date.now() + 3_600_000);
  sdk = new DqsClient({
    baseUrl: server.url,
    tokens: {
      tokenType: "Bearer",
      accessToken: forSdk.accessToken,
      accessTokenExpiresAt: hour,
      refreshToken: forSdk.refreshToken,
      refreshTokenExpiresAt: hour,
    },
  });
  await sdk.createDataset(ACCOUNT, "sales");
  await sdk.upload(ACCOUNT, "sales", "orders", CSV);
  const forCli = await httpLogin(server.url, ACCOUNT);
  expect((await dqs(["login", "--no-browser"], `${forCli.refreshToken}\n`)).code).toBe(0);
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe("a parameterized query", () => {
  it("should run through the SDK, bound by the service", async () => {
    const result = await sdk.query(
      `SELECT id, amount FROM ${TABLE} WHERE region = :region AND amount > :min ORDER BY id`,
      {
        parameters: { region: "north", min: 5 },
        wait: 60,
      },
    );

    expect(result.rows).toEqual([
      { id: 1, amount: 10.5 },
      { id: 3, amount: 7 },
    ]);
    expect(result.status.Parameters).toEqual({ region: "north", min: 5 });
  });

  it("should run through the CLI with named and with positional --param", async () => {
    const named = await dqs([
      "query",
      `SELECT id, region FROM ${TABLE} WHERE region = :region OR id = :id ORDER BY id`,
      "--param",
      "region=north",
      "--param",
      "id=2",
      "--format",
      "csv",
    ]);
    const positional = await dqs([
      "query",
      `SELECT count(*) AS n, ? AS label FROM ${TABLE} WHERE amount > ?`,
      "--param",
      '"a=b"',
      "--param",
      "5",
      "--format",
      "csv",
    ]);

    expect(named.stderr).toMatch(/succeeded/);
    expect(named.stdout).toBe("id,region\n1,north\n2,south\n3,north\n");
    expect(positional.stdout).toBe("n,label\n3,a=b\n");
  });

  it("should refuse a placeholder without a value, and --param both named and positional", async () => {
    const missing = await dqs(["query", `SELECT * FROM ${TABLE} WHERE id = :id`, "--format", "csv"]);
    const mixed = await dqs(["query", "SELECT :a", "--param", "a=1", "--param", "2"]);

    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("dqs: The placeholder :id has no value: the request has no Parameters.\n");
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toMatch(/^dqs: --param: write every one as NAME=VALUE/);
  });
});

describe("validation without running", () => {
  it("should describe a query through the SDK and the CLI, and run nothing", async () => {
    const before = (await sdk.listQueries({ limit: 100 })).queries.length;

    const validation = await sdk.validate(`SELECT region, sum(amount) AS total FROM ${TABLE} WHERE id > ? GROUP BY 1`, {
      parameters: [1],
    });
    const fromCli = await dqs([
      "--json",
      "validate",
      `SELECT id, region FROM ${TABLE} WHERE id = :id`,
      "--param",
      "id=1",
    ]);

    expect(validation).toMatchObject({
      Valid: true,
      Columns: [
        { Name: "region", DataType: "STRING" },
        { Name: "total", DataType: null },
      ],
      DataItems: [{ AccountName: ACCOUNT, DatasetName: "sales", DataName: "orders" }],
      Engine: "sqljs",
    });
    expect(fromCli.code).toBe(0);
    expect(JSON.parse(fromCli.stdout)).toMatchObject({
      Valid: true,
      Columns: [
        { Name: "id", DataType: "INTEGER" },
        { Name: "region", DataType: "STRING" },
      ],
    });
    expect((await sdk.listQueries({ limit: 100 })).queries.length).toBe(before);
  });

  it("should exit 4 from dqs validate with the message the query would fail with", async () => {
    const result = await dqs(["validate", `SELECT nope FROM ${TABLE}`]);

    expect(result.code).toBe(4);
    expect(result.stderr).toBe("dqs: Not valid: Failed: no such column: nope.\n");
  });
});
