import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DqsClient, MemoryTokenStore } from "../../src/sdk";
import { buildCli, runCli, temporaryHome, type CliResult } from "./support/cli-run";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// Result reuse (issue 13 §4) as a user meets it under `wrangler dev`: the API, the SDK and the CLI.

const OWNER = "e2e-reuse-rosa";
const READER = "e2e-reuse-ravi";
const CSV = "id,city,amount\n1,Oslo,10.5\n2,Lima,3\n3,Oslo,7\n";
const SQL = `SELECT city, count(*) AS n, sum(amount) AS total FROM "${OWNER}".sales.orders GROUP BY city ORDER BY city`;
const ROWS = "city,n,total\nLima,1,3.0\nOslo,2,17.5\n";

interface Envelope {
  Status: { Code: number; Message: string };
  Data?: Record<string, unknown>;
}

interface Status {
  QueryId: string;
  Status: string;
  Message: string;
  Reused: boolean;
  Engine: string | null;
  Timings: unknown;
  BytesLoaded: number | null;
  Size: number;
  RowCount: number | null;
  ExpiresAt: string | null;
}

let server: DevServer;
let ownerToken: string;
let readerToken: string;

function api(token: string, path: string, init: RequestInit = {}) {
  return fetch(`${server.url}${path}`, {
    ...init,
    redirect: "manual",
    headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
  });
}

async function envelope(response: Response): Promise<Envelope> {
  return (await response.json()) as Envelope;
}

/** Submits SQL (Prefer: wait) and polls until it has ended; the submit's message and the final status. */
async function run(
  token: string,
  body: { Sql: string; Reuse?: boolean },
): Promise<{ message: string; status: Status }> {
  const submitted = await envelope(
    await api(token, "/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=30" },
      body: JSON.stringify(body),
    }),
  );
  expect(submitted.Status.Code, submitted.Status.Message).toBe(200);
  const queryId = String(submitted.Data?.QueryId);
  for (let polls = 0; ; polls++) {
    const status = (await envelope(await api(token, `/v1/query/${queryId}/status`))).Data as unknown as Status;
    if (!["queued", "running"].includes(status.Status)) return { message: submitted.Status.Message, status };
    if (polls > 600) throw new Error(`query still ${status.Status}: ${body.Sql}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The rawdata redirect's Location, and the CSV behind it. */
async function result(token: string, queryId: string): Promise<{ location: string; csv: string }> {
  const redirect = await api(token, `/v1/query/${queryId}/results/rawdata`);
  expect(redirect.status).toBe(302);
  const location = redirect.headers.get("location") ?? "";
  return { location, csv: await (await fetch(location)).text() };
}

async function uploadOrders(csv: string): Promise<void> {
  const form = new FormData();
  form.append("Data", new Blob([csv]), "orders.csv");
  const uploaded = await api(ownerToken, `/v1/data/${OWNER}/sales/orders`, { method: "POST", body: form });
  expect(uploaded.status, await uploaded.clone().text()).toBe(200);
}

beforeAll(async () => {
  server = await startWranglerDev();
  ownerToken = (await httpLogin(server.url, OWNER)).accessToken;
  readerToken = (await httpLogin(server.url, READER)).accessToken;
  expect((await api(ownerToken, `/v1/dataset/${OWNER}/sales`, { method: "PUT" })).status).toBe(201);
  await uploadOrders(CSV);
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe("result reuse against wrangler dev", () => {
  let first: Status;

  it("should run a query once, then answer the same SQL from its result as a new query, Reused", async () => {
    first = (await run(ownerToken, { Sql: SQL })).status;
    const again = await run(ownerToken, { Sql: SQL });

    expect(first).toMatchObject({ Status: "succeeded", Reused: false, RowCount: 2 });
    expect(first.Engine).not.toBeNull();
    expect(again.message).toBe("The query succeeded: it reused the result of an identical earlier query.");
    expect(again.status).toMatchObject({
      Status: "succeeded",
      Reused: true,
      Engine: null,
      Timings: null,
      BytesLoaded: 0,
      Size: first.Size,
      RowCount: 2,
    });
    expect(again.status.QueryId).not.toBe(first.QueryId);
    expect(Date.parse(again.status.ExpiresAt ?? "")).toBeLessThanOrEqual(Date.parse(first.ExpiresAt ?? ""));
    expect((await result(ownerToken, again.status.QueryId)).csv).toBe(ROWS);
  });

  it("should reuse it for a user granted read access, never showing the first query's id", async () => {
    const granted = await api(ownerToken, `/v1/dataset/${OWNER}/sales/grants/${READER}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Permission: "read" }),
    });
    expect(granted.status).toBe(200);

    const theirs = await run(readerToken, { Sql: SQL });
    const { location, csv } = await result(readerToken, theirs.status.QueryId);

    expect(theirs.status).toMatchObject({ Status: "succeeded", Reused: true });
    expect(csv).toBe(ROWS);
    expect(JSON.stringify(theirs) + location).not.toContain(first.QueryId);
  });

  it('should run it with "Reuse": false, and after a new version of the item', async () => {
    const fresh = await run(ownerToken, { Sql: SQL, Reuse: false });
    await uploadOrders("id,city,amount\n1,Oslo,1.5\n");
    const onNewVersion = await run(ownerToken, { Sql: SQL });

    expect(fresh.status).toMatchObject({ Status: "succeeded", Reused: false });
    expect(onNewVersion.status).toMatchObject({ Status: "succeeded", Reused: false });
    expect((await result(ownerToken, onNewVersion.status.QueryId)).csv).toBe("city,n,total\nOslo,1,1.5\n");
  });

  it("should not reuse it once the grant is revoked: the query runs and fails", async () => {
    const again = await run(readerToken, { Sql: SQL });
    expect(again.status).toMatchObject({ Status: "succeeded", Reused: true });
    const revoked = await api(ownerToken, `/v1/dataset/${OWNER}/sales/grants/${READER}`, { method: "DELETE" });
    expect(revoked.status).toBe(200);

    const refused = await run(readerToken, { Sql: SQL });

    expect(refused.status).toMatchObject({ Status: "failed", Reused: false });
    expect(refused.status.Message).toContain("does not exist, or you may not read it");
  });

  it("should reuse through the SDK unless reuse: false", async () => {
    const client = new DqsClient({ baseUrl: server.url, tokens: new MemoryTokenStore() });
    await client.loginWithRefreshToken((await httpLogin(server.url, OWNER)).refreshToken);

    const reused = await client.query(SQL);
    const ran = await client.query(SQL, { reuse: false });

    expect(reused.status.Reused).toBe(true);
    expect(ran.status.Reused).toBe(false);
    expect(ran.rows).toEqual(reused.rows);
  });

  it("should reuse through dqs query, and run with --no-reuse", async () => {
    const cli = buildCli();
    const home = temporaryHome();
    const dqs = (args: string[], stdin?: string): Promise<CliResult> =>
      runCli(cli, args, { home, env: { DQS_URL: server.url }, stdin });
    const login = await dqs(["login", "--no-browser"], `${(await httpLogin(server.url, OWNER)).refreshToken}\n`);
    expect(login.code, login.stderr).toBe(0);

    const reused = await dqs(["query", SQL, "--format", "csv"]);
    const ran = await dqs(["query", SQL, "--format", "csv", "--no-reuse"]);

    expect(reused).toMatchObject({ code: 0, stdout: "city,n,total\nOslo,1,1.5\n" });
    expect(reused.stderr).toContain("(reused an identical earlier query's result)");
    expect(ran).toMatchObject({ code: 0, stdout: "city,n,total\nOslo,1,1.5\n" });
    expect(ran.stderr).not.toContain("reused");
  });
});
