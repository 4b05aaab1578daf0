import { afterEach, describe, expect, it, vi } from "vitest";
import { createPkce, DqsClient, MemoryTokenStore, type Pkce } from "../../src/sdk";
import { call, ORIGIN, readEnvelope, worker } from "../support/http";
import { acceptTerms, formFields, isTermsPage, login, signInAtProvider, visitCallback } from "../support/login";
import { uniqueUser } from "./support";

const REDIRECT = "http://127.0.0.1:49152/callback";

afterEach(() => {
  vi.useRealTimers();
});

function sdk(): DqsClient {
  return new DqsClient({ baseUrl: ORIGIN, tokens: new MemoryTokenStore(), fetch: worker });
}

/** GET /v1/auth as the command line opens it: a loopback redirect_uri, a PKCE challenge and a state. */
async function startLoopbackLogin(
  pkce: Pkce,
  redirectUri = REDIRECT,
  state = "cli-state",
): Promise<{ authorizeUrl: URL; cookie: string }> {
  const url = sdk().loginUrl({ redirectUri, codeChallenge: pkce.challenge, state });
  const response = await call(new URL(url).pathname + new URL(url).search);
  expect(response.status, await response.clone().text()).toBe(302);
  const cookie = response.headers
    .getSetCookie()
    .map((header) => header.split(";")[0]!)
    .find((pair) => pair.startsWith("dqs_login="));
  return { authorizeUrl: new URL(response.headers.get("location")!), cookie: cookie! };
}

/** Runs a loopback login in a "browser" to its end and returns where the service finally redirects. */
async function loopbackLogin(username: string, pkce: Pkce, redirectUri = REDIRECT): Promise<URL> {
  const { authorizeUrl, cookie } = await startLoopbackLogin(pkce, redirectUri);
  const callbackUrl = await signInAtProvider(authorizeUrl, username);
  let response = await visitCallback(callbackUrl, cookie, "text/html");
  if (response.status === 200) {
    const html = await response.text();
    expect(isTermsPage(html)).toBe(true);
    response = await acceptTerms(formFields(html).state ?? "", cookie, "text/html");
  }
  expect(response.status).toBe(302);
  expect(response.headers.get("cache-control")).toBe("no-store");
  return new URL(response.headers.get("location")!);
}

describe("GET /v1/auth with a loopback redirect_uri (RFC 8252)", () => {
  it("should send a new user, after the terms, back to the loopback address with a code and the state", async () => {
    const pkce = await createPkce();
    const account = uniqueUser("loop-new");

    const landing = await loopbackLogin(account, pkce);

    expect(`${landing.origin}${landing.pathname}`).toBe(REDIRECT);
    expect(landing.searchParams.get("state")).toBe("cli-state");
    expect(landing.searchParams.get("code")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const client = sdk();
    const { accountName } = await client.exchangeLoginCode({
      code: landing.searchParams.get("code")!,
      codeVerifier: pkce.verifier,
      redirectUri: REDIRECT,
    });
    expect(accountName).toBe(account);
    expect(await client.myDatasets()).toEqual([]);
  });

  it("should redirect at once for a user who accepted the terms before, to [::1] or localhost too", async () => {
    const account = uniqueUser("loop-old");
    await login(account);
    for (const redirectUri of ["http://[::1]:8000/cb", "http://localhost:1234/done?x=1"]) {
      const pkce = await createPkce();
      const landing = await loopbackLogin(account, pkce, redirectUri);

      expect(landing.href.startsWith(redirectUri)).toBe(true);
      const client = sdk();
      await client.exchangeLoginCode({
        code: landing.searchParams.get("code")!,
        codeVerifier: pkce.verifier,
        redirectUri,
      });
      expect(await client.tokens()).not.toBeNull();
    }
  });

  it.each([
    ["https://127.0.0.1:5000/cb", "https"],
    ["http://127.0.0.1/cb", "no port"],
    ["http://example.com:5000/cb", "another host"],
    ["http://127.0.0.2:5000/cb", "another loopback address"],
    ["http://user@127.0.0.1:5000/cb", "user info"],
    ["http://127.0.0.1:5000/cb#x", "a fragment"],
    ["not a url", "not a URL"],
  ])("should refuse the redirect_uri %s (%s) with a 400 and redirect nowhere", async (redirectUri) => {
    const pkce = await createPkce();
    const query = new URLSearchParams({
      redirect_uri: redirectUri,
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
    });

    const body = await readEnvelope(await call(`/v1/auth?${query}`), 400);

    expect(body.Status.Message).toContain("loopback");
  });

  it("should require PKCE S256 with a loopback redirect_uri", async () => {
    const pkce = await createPkce();
    const cases: Record<string, string>[] = [
      { redirect_uri: REDIRECT },
      { redirect_uri: REDIRECT, code_challenge: pkce.challenge },
      { redirect_uri: REDIRECT, code_challenge: pkce.verifier, code_challenge_method: "plain" },
      { redirect_uri: REDIRECT, code_challenge: "short", code_challenge_method: "S256" },
      { code_challenge: pkce.challenge, code_challenge_method: "S256" },
    ];
    for (const params of cases) {
      const response = await call(`/v1/auth?${new URLSearchParams(params)}`);
      expect(response.status, JSON.stringify(params)).toBe(400);
    }
  });

  it("should tell the loopback client when the provider refused the login", async () => {
    const pkce = await createPkce();
    const { authorizeUrl, cookie } = await startLoopbackLogin(pkce);
    const denied = new URL(`${ORIGIN}/v1/auth/callback`);
    denied.searchParams.set("state", authorizeUrl.searchParams.get("state")!);
    denied.searchParams.set("error", "access_denied");

    const response = await visitCallback(denied, cookie, "text/html");

    expect(response.status).toBe(302);
    const landing = new URL(response.headers.get("location")!);
    expect(`${landing.origin}${landing.pathname}`).toBe(REDIRECT);
    expect(Object.fromEntries(landing.searchParams)).toEqual({ error: "access_denied", state: "cli-state" });
  });
});

describe("POST /v1/auth/code", () => {
  async function code(pkce: Pkce): Promise<string> {
    const landing = await loopbackLogin(uniqueUser("loop-code"), pkce);
    return landing.searchParams.get("code")!;
  }

  it("should exchange a code once only", async () => {
    const pkce = await createPkce();
    const oneTime = await code(pkce);
    await sdk().exchangeLoginCode({ code: oneTime, codeVerifier: pkce.verifier, redirectUri: REDIRECT });

    const again = sdk().exchangeLoginCode({ code: oneTime, codeVerifier: pkce.verifier, redirectUri: REDIRECT });

    await expect(again).rejects.toMatchObject({ code: 401, message: expect.stringContaining("not valid") });
  });

  it("should refuse a wrong verifier, and spend the code doing so", async () => {
    const pkce = await createPkce();
    const oneTime = await code(pkce);
    const other = await createPkce();

    await expect(
      sdk().exchangeLoginCode({ code: oneTime, codeVerifier: other.verifier, redirectUri: REDIRECT }),
    ).rejects.toMatchObject({ code: 401 });
    await expect(
      sdk().exchangeLoginCode({ code: oneTime, codeVerifier: pkce.verifier, redirectUri: REDIRECT }),
    ).rejects.toMatchObject({ code: 401 });
  });

  it("should refuse another redirect_uri than the login's", async () => {
    const pkce = await createPkce();
    const oneTime = await code(pkce);

    await expect(
      sdk().exchangeLoginCode({
        code: oneTime,
        codeVerifier: pkce.verifier,
        redirectUri: "http://127.0.0.1:1/callback",
      }),
    ).rejects.toMatchObject({ code: 401 });
  });

  it("should refuse a code older than two minutes", async () => {
    const pkce = await createPkce();
    const oneTime = await code(pkce);
    vi.useFakeTimers({ now: Date.now() + 121_000, toFake: ["Date"] });

    await expect(
      sdk().exchangeLoginCode({ code: oneTime, codeVerifier: pkce.verifier, redirectUri: REDIRECT }),
    ).rejects.toMatchObject({ code: 401 });
  });

  it("should answer a malformed body with 400", async () => {
    const response = await call("/v1/auth/code", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Code: "x" }),
    });

    await readEnvelope(response, 400);
  });
});
