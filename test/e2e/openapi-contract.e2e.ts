import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContractClient, type Answer, type ContractInit } from "./support/contract";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// The contract test: every exchange below is checked against the document the service serves, by Stoplight
// Prism's validators (support/contract.ts): an undocumented status, header or body fails, and so does a request
// that breaks the document where the service took it. It drives every operation the document lists (the last
// test fails for one without a success here), with the main error statuses of each.

let server: DevServer;
let api: ContractClient;
/** Alice's access token: she owns the dataset the data and query operations use. */
let token: string;

const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";
const CSV = "id,name\n1,north\n2,south\n";
const ITEM = "`alice.sales.orders.csv`";

/** Registers a test whose exchanges must all match the document. */
function exchanges(name: string, body: () => Promise<void>) {
  it(name, async () => {
    api.problems.length = 0;
    await body();
    expect(api.problems).toEqual([]);
  });
}

/** The cookies a browser would keep across a login's steps. */
class CookieJar {
  private readonly cookies = new Map<string, string>();

  remember(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const [name = "", value = ""] = pair.split("=");
      if (value === "" || /max-age=0/i.test(line)) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), value.trim());
    }
  }

  get(name: string): string {
    return this.cookies.get(name) ?? "";
  }

  header(): Record<string, string> {
    return { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ") };
  }
}

/** An exchange under /v1 that sends the jar's cookies and keeps the ones set. */
async function step(jar: CookieJar, path: string, init: ContractInit = {}): Promise<Answer> {
  const answer = await api.send(path, {
    ...init,
    headers: { ...jar.header(), ...(init.headers as Record<string, string>) },
  });
  jar.remember(answer.headers);
  return answer;
}

/** Signs in at the development provider a login's redirect names; returns the callback's path under /v1. */
async function signIn(redirect: Answer | Response, username: string): Promise<string> {
  const authorize = new URL(redirect.headers.get("location")!);
  const form = new URLSearchParams(authorize.searchParams);
  form.set("username", username);
  const signedIn = await fetch(`${server.url}/idp/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": FORM },
    body: form,
  });
  const callback = new URL(signedIn.headers.get("location")!);
  return `${callback.pathname.replace(/^\/v1/, "")}${callback.search}`;
}

const bearer = (accessToken = token) => ({ authorization: `Bearer ${accessToken}` });
/** A POST of `value` as JSON, with the bearer token unless other headers are given. */
const json = (value: unknown, headers: Record<string, string> = bearer()): ContractInit => ({
  method: "POST",
  headers: { ...headers, "content-type": JSON_TYPE },
  body: JSON.stringify(value),
});
/** A POST whose body is not of a type the operation takes: 415, and a request the document refuses too. */
const plainText = (headers: Record<string, string> = bearer()): ContractInit => ({
  method: "POST",
  headers: { ...headers, "content-type": "text/plain" },
  body: "id,name\n",
  request: "invalid",
});
const data = (answer: Answer) => (answer.body as { Data: Record<string, unknown> }).Data;

/** A multipart body as the fetch API writes it, with its boundary. */
async function multipart(parts: Record<string, string | Blob>): Promise<{ body: Uint8Array; type: string }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(parts))
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, "orders.csv");
  const request = new Request("http://localhost/", { method: "POST", body: form });
  return { body: new Uint8Array(await request.arrayBuffer()), type: request.headers.get("content-type")! };
}

async function upload(path: string, parts: Record<string, string | Blob>, check?: ContractInit["request"]) {
  const { body, type } = await multipart(parts);
  return api.send(path, { method: "POST", headers: { ...bearer(), "content-type": type }, body, request: check });
}

/** A PKCE verifier and its S256 challenge (RFC 7636). */
function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** Starts a loopback login (the command line's) and brings it back from the provider. */
async function loopbackLogin(jar: CookieJar, username: string, redirectUri: string) {
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "cli-state",
  });
  const start = await step(jar, `/auth?${query}`);
  expect(start.status).toBe(302);
  return { callback: await signIn(start, username), verifier };
}

beforeAll(async () => {
  // Small limits, so that 413 and 429 cost a few requests.
  server = await startWranglerDev({ MAX_UPLOAD_BYTES: "4096", MAX_SQL_LENGTH: "1000", QUERY_MAX_QUEUED_PER_USER: "2" });
  api = await ContractClient.open(server.url);
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe("the service against its OpenAPI document", () => {
  exchanges("should log in a new user with JSON: the terms refused as 401, then accepted", async () => {
    const jar = new CookieJar();
    const start = await step(jar, "/auth");
    expect(start.status).toBe(302);
    const callback = await signIn(start, "alice");

    expect((await step(jar, callback, { headers: { accept: JSON_TYPE } })).status).toBe(401);
    const accepted = await step(jar, "/auth/terms", {
      method: "POST",
      headers: { "content-type": FORM, accept: JSON_TYPE },
      body: new URLSearchParams({ state: jar.get("dqs_login"), accept: "yes" }).toString(),
    });

    expect(accepted.status).toBe(200);
    token = String(data(accepted).AccessToken);
  });

  exchanges(
    "should log in a new user in a browser: pages for the terms, the tokens and a login that has ended",
    async () => {
      const jar = new CookieJar();
      const html = { accept: "text/html" };
      const callback = await signIn(await step(jar, "/auth", { headers: html }), "bob");
      const termsPage = await step(jar, callback, { headers: html });
      expect(termsPage.status).toBe(200);
      const state = jar.get("dqs_login");
      const terms = { method: "POST", body: new URLSearchParams({ state, accept: "yes" }).toString() };

      expect((await step(jar, "/auth/terms", { ...terms, headers: { ...html, "content-type": FORM } })).status).toBe(
        200,
      );
      // The login cookie is gone: a reload of either page meets a login that has ended.
      expect((await step(jar, callback, { headers: html })).status).toBe(400);
      expect((await step(jar, callback, { headers: { accept: JSON_TYPE } })).status).toBe(400);
      expect((await step(jar, "/auth/terms", { ...terms, headers: { ...html, "content-type": FORM } })).status).toBe(
        400,
      );
      expect(
        (await step(jar, "/auth/terms", { ...terms, headers: { accept: JSON_TYPE, "content-type": FORM } })).status,
      ).toBe(400);
      expect(
        (await step(jar, "/auth/terms", { ...json({ state, accept: "yes" }, {}), request: "invalid" })).status,
      ).toBe(415);
    },
  );

  exchanges("should sign in to the console: 303 into it, after the terms for a new user", async () => {
    for (const username of ["alice", "carol"]) {
      const jar = new CookieJar();
      const start = await fetch(`${server.url}/console/sign-in`, { redirect: "manual" });
      jar.remember(start.headers);
      let end = await step(jar, await signIn(start, username), { headers: { accept: "text/html" } });
      if (username === "carol") {
        expect(end.status).toBe(200);
        end = await step(jar, "/auth/terms", {
          method: "POST",
          headers: { "content-type": FORM, accept: "text/html" },
          body: new URLSearchParams({ state: jar.get("dqs_login"), accept: "yes" }).toString(),
        });
      }

      expect(end.status).toBe(303);
      expect(end.headers.get("location")).toBe("/console/");
    }
  });

  exchanges("should log in a loopback client: 302 with a code, spent once at POST /auth/code", async () => {
    const redirectUri = "http://127.0.0.1:9/callback";
    const jar = new CookieJar();
    const { callback, verifier } = await loopbackLogin(jar, "alice", redirectUri);
    const back = await step(jar, callback);
    expect(back.status).toBe(302);
    const code = new URL(back.headers.get("location")!).searchParams.get("code")!;
    const exchange = { Code: code, CodeVerifier: verifier, RedirectUri: redirectUri };

    expect((await api.send("/auth/code", json(exchange, {}))).status).toBe(200);
    expect((await api.send("/auth/code", json(exchange, {}))).status).toBe(401);
    expect((await api.send("/auth/code", { ...json({}, {}), request: "invalid" })).status).toBe(400);
    expect((await api.send("/auth/code", plainText({}))).status).toBe(415);
    expect((await api.send("/auth?redirect_uri=https%3A%2F%2Fexample.com%2F&code_challenge=x")).status).toBe(400);
  });

  exchanges(
    "should end logins the provider refused: 401 for a page, 302 with error for a loopback client",
    async () => {
      const jar = new CookieJar();
      await step(jar, "/auth");
      const denied = `/auth/callback?state=${jar.get("dqs_login")}&error=access_denied`;
      expect((await step(jar, denied, { headers: { accept: JSON_TYPE } })).status).toBe(401);

      const loopback = new CookieJar();
      await loopbackLogin(loopback, "alice", "http://127.0.0.1:9/callback");
      const back = await step(loopback, `/auth/callback?state=${loopback.get("dqs_login")}&error=access_denied`);
      expect(back.status).toBe(302);
      expect(back.headers.get("location")).toContain("error=access_denied");
    },
  );

  exchanges("should answer GET /auth/terms with a page, or 405 for JSON", async () => {
    expect((await api.send("/auth/terms", { headers: { accept: "text/html" } })).status).toBe(200);
    const refused = await api.send("/auth/terms", { headers: { accept: JSON_TYPE } });
    expect(refused.status).toBe(405);
    expect(refused.headers.get("allow")).toBe("POST");
  });

  exchanges("should renew tokens, revoke a session whose spent refresh token comes back, and log out", async () => {
    const jar = new CookieJar();
    const tokens = await step(jar, await signIn(await step(jar, "/auth"), "alice"), { headers: { accept: JSON_TYPE } });
    expect(tokens.status).toBe(200);
    const refresh = { RefreshToken: String(data(tokens).RefreshToken) };
    expect((await api.send("/auth/token", json(refresh, {}))).status).toBe(200);
    expect((await api.send("/auth/token", json(refresh, {}))).status).toBe(401);
    expect((await api.send("/auth/token", { ...json({}, {}), request: "invalid" })).status).toBe(400);
    expect((await api.send("/auth/token", plainText({}))).status).toBe(415);

    const again = new CookieJar();
    const relogin = await step(again, await signIn(await step(again, "/auth"), "alice"), {
      headers: { accept: JSON_TYPE },
    });
    const other = String(data(relogin).AccessToken);
    expect((await api.send("/auth/logout", { method: "POST", headers: bearer(other) })).status).toBe(200);
    expect((await api.send("/me", { headers: bearer(other) })).status).toBe(401);
  });

  exchanges("should answer the caller's own resources", async () => {
    for (const path of ["/me", "/me/datasets", "/me/catalog", "/me/catalog/columns", "/me/webhook-secret"])
      expect((await api.send(path, { headers: bearer() })).status).toBe(200);
    expect((await api.send("/me/webhook-secret/rotate", { method: "POST", headers: bearer() })).status).toBe(200);
    expect((await api.send("/account/alice/datasets", { headers: bearer() })).status).toBe(200);
    expect((await api.send("/account/Not%20a%20name/datasets", { headers: bearer() })).status).toBe(404);
  });

  exchanges("should create a dataset, upload into it and share it", async () => {
    const put = (path: string) => api.send(path, { method: "PUT", headers: bearer() });
    expect((await put("/dataset/alice/sales")).status).toBe(201);
    expect(
      (
        await api.send("/dataset/alice/sales", {
          method: "PUT",
          headers: { ...bearer(), "content-type": JSON_TYPE },
          body: JSON.stringify({ Visibility: "private", Description: "Orders" }),
        })
      ).status,
    ).toBe(200);
    expect((await put("/dataset/alice/Not%20a%20name")).status).toBe(400);
    expect((await put("/dataset/bob/sales")).status).toBe(404);

    expect((await upload("/data/alice/sales/orders.csv", { Data: new Blob([CSV]) })).status).toBe(200);
    expect(
      (await upload("/data/alice/sales/orders.csv", { ForceGenerateTableDefinition: "true" }, "invalid")).status,
    ).toBe(400);
    expect((await upload("/data/bob/sales/orders.csv", { Data: new Blob([CSV]) })).status).toBe(404);
    expect((await upload("/data/alice/sales/big.csv", { Data: new Blob(["x,y\n".repeat(1500)]) })).status).toBe(413);
    expect((await api.send("/data/alice/sales/orders.csv", plainText())).status).toBe(415);

    const grant = (grantee: string, permission: string, check?: ContractInit["request"]) =>
      api.send(`/dataset/alice/sales/grants/${grantee}`, {
        method: "PUT",
        headers: { ...bearer(), "content-type": JSON_TYPE },
        body: JSON.stringify({ Permission: permission }),
        request: check,
      });
    expect((await grant("bob", "read")).status).toBe(200);
    expect((await grant("alice", "read")).status).toBe(400);
    expect((await grant("bob", "admin", "invalid")).status).toBe(400);
    expect((await grant("nobody", "read")).status).toBe(404);
    expect((await api.send("/dataset/alice/sales/grants", { headers: bearer() })).status).toBe(200);
    expect((await api.send("/dataset/alice/sales/grants/bob", { method: "DELETE", headers: bearer() })).status).toBe(
      200,
    );
    expect((await api.send("/dataset/alice/sales/grants/bob", { method: "DELETE", headers: bearer() })).status).toBe(
      404,
    );
  });

  exchanges("should read a data item: its list, download, schema and storage, or 404", async () => {
    for (const dataset of ["sales", "nothing"]) {
      const expected = dataset === "sales" ? 200 : 404;
      expect((await api.send(`/dataset/alice/${dataset}/data`, { headers: bearer() })).status).toBe(expected);
      expect((await api.send(`/dataset/alice/${dataset}/grants`, { headers: bearer() })).status).toBe(expected);
      const item = `/data/alice/${dataset}/orders.csv`;
      expect((await api.send(`${item}/rawdata`, { headers: bearer() })).status).toBe(expected === 200 ? 302 : 404);
      expect((await api.send(`${item}/metadata/schema`, { headers: bearer() })).status).toBe(expected);
      expect((await api.send(`${item}/metadata/storage`, { headers: bearer() })).status).toBe(expected);
    }
  });

  exchanges("should validate and run queries, and serve a result or say why not", async () => {
    const sql = `SELECT id, name FROM ${ITEM} ORDER BY id`;
    expect((await api.send("/query/validate", json({ Sql: sql }))).status).toBe(200);
    expect((await api.send("/query/validate", { ...json({}), request: "invalid" })).status).toBe(400);
    expect((await api.send("/query/validate", json({ Sql: "x".repeat(80_000) }))).status).toBe(413);
    expect((await api.send("/query/validate", plainText())).status).toBe(415);

    const wait = { ...bearer(), prefer: "wait=30" };
    const succeeded = await api.send("/query", json({ Sql: sql }, wait));
    expect(data(succeeded).Status).toBe("succeeded");
    expect(succeeded.headers.get("preference-applied")).toBe("wait=30");
    const failed = await api.send("/query", json({ Sql: "SELECT * FROM nowhere" }, wait));
    expect(data(failed).Status).toBe("failed");
    expect((await api.send("/query", json({ Sql: "SELECT :a" }))).status).toBe(400);
    expect((await api.send("/query", json({ Sql: "x".repeat(80_000) }))).status).toBe(413);
    expect((await api.send("/query", plainText())).status).toBe(415);

    const ok = `/query/${String(data(succeeded).QueryId)}`;
    const bad = `/query/${String(data(failed).QueryId)}`;
    const unknown = "/query/no-such-query";
    const get = (path: string, check?: ContractInit["request"]) =>
      api.send(path, { headers: bearer(), request: check });
    for (const [path, status] of [
      [`${ok}/status`, 200],
      [`${ok}/results/rows?limit=1`, 200],
      [`${ok}/results/rows?cursor=forged`, 400],
      [`${ok}/results/rawdata`, 302],
      [`${ok}/results/rawdata?format=parquet`, 302],
      [`${ok}/results/metadata/schema`, 200],
      [`${bad}/status`, 200],
      [`${bad}/results/rows`, 400],
      [`${bad}/results/rawdata`, 400],
      [`${bad}/results/metadata/schema`, 404],
      [`${unknown}/status`, 404],
      [`${unknown}/results/rows`, 404],
      [`${unknown}/results/rawdata`, 404],
      [`${unknown}/results/metadata/schema`, 404],
      ["/me/queries?limit=1", 200],
      ["/me/queries?cursor=forged", 400],
    ] as const)
      expect((await get(path)).status, path).toBe(status);
    expect((await get(`${ok}/results/rows?limit=0`, "invalid")).status).toBe(400);
    expect((await get(`${ok}/results/rawdata?format=xml`, "invalid")).status).toBe(400);
    expect((await get("/me/queries?limit=0", "invalid")).status).toBe(400);
  });

  exchanges(
    "should refuse a query past the queue limit, cancel waiting and running ones, not an ended one",
    async () => {
      // One query runs at a time per user here (src/local) and two may wait: the fourth is refused, or the third
      // when the first has not started yet.
      const long =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 30000000) SELECT count(*) FROM c";
      const submitted: string[] = [];
      let refused: Answer | undefined;
      while (submitted.length < 4 && refused === undefined) {
        const answer = await api.send("/query", json({ Sql: `${long} -- ${submitted.length}` }));
        if (answer.status === 429) refused = answer;
        else submitted.push(String(data(answer).QueryId));
      }
      expect(refused?.headers.get("retry-after")).toBe("10");
      const cancel = (id: string) => api.send(`/query/${id}/cancel`, { method: "POST", headers: bearer() });

      for (const id of [...submitted].reverse()) expect((await cancel(id)).status).toBe(200);
      expect((await cancel(submitted[0]!)).status).toBe(400);
      expect((await cancel("no-such-query")).status).toBe(404);
    },
  );

  exchanges("should delete a data item and a dataset, then answer 404 for them", async () => {
    const remove = (path: string) => api.send(path, { method: "DELETE", headers: bearer() });
    expect((await remove("/data/alice/sales/orders.csv")).status).toBe(200);
    expect((await remove("/data/alice/sales/orders.csv")).status).toBe(404);
    expect((await remove("/dataset/alice/sales")).status).toBe(200);
    expect((await remove("/dataset/alice/sales")).status).toBe(404);
  });

  exchanges(
    "should answer 401 with the bearer challenge to every bearer operation called without a token",
    async () => {
      const bearerOperations = api.operations.filter((operation) => (operation.security ?? []).length > 0);
      expect(bearerOperations.length).toBeGreaterThan(20);
      for (const operation of bearerOperations) {
        const path = operation.path.replace(/\{[^}]+\}/g, "x");
        // Without the body some operations need: the token is checked first.
        const answer = await api.send(path, { method: operation.method.toUpperCase(), request: "unchecked" });
        expect(answer.status, `${operation.method} ${path}`).toBe(401);
        expect(answer.headers.get("www-authenticate")).toContain("Bearer");
      }
    },
  );

  exchanges("should answer 405 with Allow to a method a documented path does not have", async () => {
    const paths = new Set(api.operations.map((operation) => operation.path.replace(/\{[^}]+\}/g, "x")));
    for (const path of paths) expect((await api.send(path, { method: "PATCH" })).status, path).toBe(405);
  });

  it("should have driven every operation of the document to a success", () => {
    // A new operation fails here until this file exercises it.
    const missing = api.operations
      .map((operation) => `${operation.method.toUpperCase()} ${operation.path}`)
      .filter((key) => ![...(api.seen.get(key) ?? [])].some((status) => status < 400));
    expect(missing).toEqual([]);
  });

  // Last: it uses up the minute's auth requests of the local client address. (A user's 1,200 bearer requests a
  // minute would take most of a minute here; test/http/rate-limit.test.ts answers them.)
  exchanges("should answer 429 with Retry-After past a client address's auth requests a minute", async () => {
    let answer: Answer | undefined;
    for (let sent = 0; sent < 200 && answer?.status !== 429; sent++)
      answer = await api.send("/auth/terms", { headers: { accept: "text/html" } });
    expect(answer?.status).toBe(429);
    expect(answer?.headers.get("retry-after")).toBe("60");
  });
});
