import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DqsApiError, DqsClient, DqsQueryError, MemoryTokenStore, type QueryStatus } from "../../src/sdk";
import { buildCli, runCli, temporaryHome } from "./support/cli-run";
import { httpLogin } from "./support/http-login";
import { freePort, startWranglerDev, type DevServer } from "./support/wrangler-dev";

// Completion webhooks as a program meets them: `wrangler dev` runs the query, its QueryState hands the end to the
// local webhook queue, the API Worker's consumer POSTs it to a receiver listening here on a loopback port
// (development mode accepts loopback), and the receiver checks it with the standardwebhooks package.

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let server: DevServer;
let client: DqsClient;
let receiver: Server;
let hooks: string;
const deliveries: Delivery[] = [];
/** How the receiver answers each path: a status per call, the last one repeating. */
const script: Record<string, number[]> = {};

function received(path: string): Delivery[] {
  return deliveries.filter((delivery) => delivery.path === path);
}

async function until<T>(what: string, read: () => Promise<T> | T, done: (value: T) => boolean, seconds = 40) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${seconds} s:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function verify(delivery: Delivery, secret: string): QueryStatus {
  const headers = Object.fromEntries(
    Object.entries(delivery.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value!]),
  );
  return new Webhook(secret).verify(delivery.body, headers) as QueryStatus;
}

beforeAll(async () => {
  const port = await freePort();
  hooks = `http://127.0.0.1:${port}`;
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const path = request.url ?? "";
      deliveries.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      const answers = script[path] ?? [204];
      const status = answers.length > 1 ? answers.shift()! : answers[0]!;
      response.writeHead(status, status === 302 ? { location: `${hooks}/after-redirect` } : {});
      response.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, "127.0.0.1", resolve));
  server = await startWranglerDev();
  client = new DqsClient({ baseUrl: server.url, tokens: new MemoryTokenStore() });
  await client.loginWithRefreshToken((await httpLogin(server.url, "e2e-hooks")).refreshToken);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe("completion webhooks against wrangler dev", () => {
  it("should POST a signed webhook to a loopback receiver when a query succeeds and when one fails", async () => {
    const secret = await client.webhookSecret();

    const result = await client.query("SELECT 6 * 7 AS answer", { callback: `${hooks}/succeeded?run=1`, wait: 60 });
    const failure = await client
      .query("SELECT * FROM nobody.nothing.here", { callback: `${hooks}/failed`, wait: 60 })
      .catch((error: unknown) => error);

    expect(result.rows).toEqual([{ answer: 42 }]);
    expect(failure).toBeInstanceOf(DqsQueryError);
    const [succeeded] = await until(
      "the success webhook",
      () => received("/succeeded?run=1"),
      (d) => d.length > 0,
    );
    const [failed] = await until(
      "the failure webhook",
      () => received("/failed"),
      (d) => d.length > 0,
    );
    expect(succeeded!.headers["content-type"]).toBe("application/json");
    expect(succeeded!.headers["webhook-id"]).toBe(result.queryId);
    expect(verify(succeeded!, secret)).toMatchObject({
      QueryId: result.queryId,
      Status: "succeeded",
      RowCount: 1,
      Callback: { Url: `${hooks}/succeeded?run=1`, LastDelivery: null },
    });
    expect(verify(failed!, secret)).toMatchObject({
      QueryId: (failure as DqsQueryError).queryId,
      Status: "failed",
      Message: expect.stringMatching(/nobody\.nothing\.here/),
    });
    // A body changed on the way, or another secret, does not verify.
    expect(() => verify({ ...succeeded!, body: succeeded!.body.replace("succeeded", "failed") }, secret)).toThrow();
    expect(() => verify(succeeded!, "whsec_" + Buffer.alloc(32, 1).toString("base64"))).toThrow();

    const status = await until(
      "the recorded delivery",
      () => client.queryStatus(result.queryId),
      (s) => s.Callback?.LastDelivery?.Delivered === true,
    );
    expect(status.Callback?.LastDelivery).toMatchObject({ Attempt: 1, StatusCode: 204, Error: null });
  });

  it("should try again after a failed attempt (the queue's backoff) and show the attempt that delivered", async () => {
    script["/flaky"] = [503, 204];

    const { queryId } = await client.submitQuery("SELECT 1 AS one", { callback: `${hooks}/flaky` });

    const failedFirst = await until(
      "the first attempt",
      () => client.queryStatus(queryId),
      (s) => s.Callback?.LastDelivery?.Attempt === 1,
    );
    expect(failedFirst.Callback?.LastDelivery).toMatchObject({
      StatusCode: 503,
      Error: "The receiver answered 503.",
      Delivered: false,
      NextAttemptAt: expect.any(String),
    });
    const delivered = await until(
      "the second attempt",
      () => client.queryStatus(queryId),
      (s) => s.Callback?.LastDelivery?.Delivered === true,
      60,
    );
    expect(delivered.Callback?.LastDelivery).toMatchObject({ Attempt: 2, StatusCode: 204, NextAttemptAt: null });
    const attempts = received("/flaky");
    expect(attempts).toHaveLength(2);
    expect(attempts.map((attempt) => attempt.headers["webhook-id"])).toEqual([queryId, queryId]);
    const secret = await client.webhookSecret();
    expect(attempts.map((attempt) => verify(attempt, secret).QueryId)).toEqual([queryId, queryId]);
  });

  it("should not follow a redirect from the receiver", async () => {
    script["/redirect"] = [302];

    const { queryId } = await client.submitQuery("SELECT 1 AS one", { callback: `${hooks}/redirect` });

    const status = await until(
      "the redirected attempt",
      () => client.queryStatus(queryId),
      (s) => s.Callback?.LastDelivery?.Attempt === 1,
    );
    expect(status.Callback?.LastDelivery).toMatchObject({
      StatusCode: 302,
      Error: "The receiver answered 302 (a redirect); redirects are not followed.",
      Delivered: false,
    });
    expect(received("/redirect")).toHaveLength(1);
    expect(received("/after-redirect")).toHaveLength(0);
  });

  it("should refuse a callback URL outside the rule with a 400 naming it", async () => {
    const error = await client
      .submitQuery("SELECT 1", { callback: "http://169.254.169.254/latest/meta-data" })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DqsApiError);
    expect(error).toMatchObject({
      code: 400,
      message: expect.stringMatching(/^Callback\.Url must use https, not http\./),
    });
  });

  it("should take dqs query --callback and show the secret with dqs webhook-secret", async () => {
    const cli = buildCli();
    const home = temporaryHome();
    const dqs = (args: string[], stdin?: string) => runCli(cli, args, { home, env: { DQS_URL: server.url }, stdin });
    const refreshToken = (await httpLogin(server.url, "e2e-hooks-cli")).refreshToken;
    expect((await dqs(["login", "--no-browser"], `${refreshToken}\n`)).code).toBe(0);

    const shown = await dqs(["webhook-secret", "--json"]);
    const run = await dqs(["query", "SELECT 2 AS two", "--callback", `${hooks}/cli`, "--format", "csv"]);

    expect(shown.code, shown.stderr).toBe(0);
    const secret = (JSON.parse(shown.stdout) as { Secret: string }).Secret;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("two\n2\n");
    const [delivery] = await until(
      "the CLI query's webhook",
      () => received("/cli"),
      (d) => d.length > 0,
    );
    const body = verify(delivery!, secret);
    expect(body).toMatchObject({ Status: "succeeded", Sql: "SELECT 2 AS two" });
    await until(
      "the recorded delivery",
      () => dqs(["status", body.QueryId]),
      (status) => /Delivery\s+delivered at .* \(attempt 1, HTTP 204\)/.test(status.stdout),
    );

    const rotated = await dqs(["webhook-secret", "--rotate"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout.trim()).toMatch(/^whsec_/);
    expect(rotated.stdout.trim()).not.toBe(secret);
    expect(rotated.stderr).toMatch(/signed with the old secret too/);
  });
});
