import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, ORIGIN, readEnvelope, workerWith, type Fetch } from "../support/http";
import {
  acceptTerms,
  authHeader,
  formFields,
  isTermsPage,
  login,
  loginUntilCallback,
  signInAtProvider,
  startLogin,
  tokensFromPage,
  visitCallback,
  type JwtData,
} from "../support/login";

const ISO_UTC_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** Seconds from now until an ISO 8601 time. */
function secondsUntil(iso: string): number {
  return (Date.parse(iso) - Date.now()) / 1000;
}

async function accountOf(username: string): Promise<{ accounts: number; name: string | null; sessions: number }> {
  const row = await env.DB.prepare(
    `SELECT COUNT(*) AS accounts, MAX(a.name) AS name,
            (SELECT COUNT(*) FROM sessions s JOIN users v ON v.id = s.user_id WHERE v.subject = ?1) AS sessions
     FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.subject = ?1`,
  )
    .bind(`dev|${username}`)
    .first<{ accounts: number; name: string | null; sessions: number }>();
  return row!;
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("GET /v1/auth", () => {
  it("should redirect to the development provider's authorization endpoint", async () => {
    const response = await call("/v1/auth");

    expect(response.status).toBe(302);
    const location = new URL(response.headers.get("location") ?? "");
    expect(`${location.origin}${location.pathname}`).toBe(`${ORIGIN}/idp/authorize`);
  });

  it("should ask for an authorization code with PKCE S256, a state and a nonce", async () => {
    const { authorizeUrl } = await startLogin();

    const params = authorizeUrl.searchParams;
    expect(params.get("response_type")).toBe("code");
    expect(params.get("client_id")).toBe("dqs-dev");
    expect(params.get("redirect_uri")).toBe(`${ORIGIN}/v1/auth/callback`);
    expect(params.get("scope")?.split(" ")).toContain("openid");
    expect(params.get("code_challenge_method")).toBe("S256");
    expect(params.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get("state")).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    expect(params.get("nonce")).toMatch(/^[A-Za-z0-9_-]{43,}$/);
  });

  it("should use a fresh state, nonce and code challenge for every login", async () => {
    const [first, second] = [(await startLogin()).authorizeUrl, (await startLogin()).authorizeUrl];

    for (const name of ["state", "nonce", "code_challenge"])
      expect(first.searchParams.get(name)).not.toBe(second.searchParams.get(name));
  });

  it("should bind the login to the browser with an HttpOnly cookie holding the state", async () => {
    const response = await call("/v1/auth");

    const state = new URL(response.headers.get("location") ?? "").searchParams.get("state");
    const cookies = response.headers.getSetCookie();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toContain(`dqs_login=${state};`);
    expect(cookies[0]).toMatch(/;\s*HttpOnly/i);
    expect(cookies[0]).toMatch(/;\s*SameSite=Lax/i);
    expect(cookies[0]).toMatch(/;\s*Path=\/v1\/auth/);
    expect(response.headers.get("cache-control")).toBe("no-store");
  });
});

describe("GET /v1/auth/callback", () => {
  it("should refuse a callback that comes without the login cookie", async () => {
    const { callbackUrl } = await loginUntilCallback("cb-no-cookie");

    const body = await readEnvelope(await visitCallback(callbackUrl, null, "application/json"), 400);

    expect(body.Status.Message).toMatch(/not started in this browser.*GET \/v1\/auth/);
  });

  it("should show a browser that reloads or goes back to an ended login a page saying so, with a way to sign in", async () => {
    // A limiter of its own: the file's other logins use up the client address's minute.
    const via = workerWith({ AUTH_RATE_LIMITER: { limit: async () => ({ success: true }) } });
    const { response, start, callbackUrl } = await loginUntilCallback("cb-reload", "text/html", via);
    expect(response.status).toBe(200);

    const replayed = await visitCallback(callbackUrl, start.cookie, "text/html", via);
    const withoutCookie = await visitCallback(callbackUrl, null, "text/html", via);

    for (const page of [replayed, withoutCookie]) {
      expect(page.status).toBe(400);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      const text = await page.text();
      expect(text).toContain("This login has ended");
      // A console sign-in ended so (Back after signing in) goes to the console; an API login signs in again.
      expect(text).toContain('<a class="button" href="/console/">Open the console</a>');
      expect(text).toContain('<a class="button secondary" href="/v1/auth">Sign in again for API tokens</a>');
    }
  });

  it("should refuse a callback whose state belongs to another login", async () => {
    const mine = await startLogin();
    const theirs = await startLogin();
    const theirCallback = await signInAtProvider(theirs.authorizeUrl, "cb-other-state");

    const body = await readEnvelope(await visitCallback(theirCallback, mine.cookie, "application/json"), 400);

    expect(body.Status.Message).toMatch(/not started in this browser/);
  });

  it("should refuse a replayed callback", async () => {
    const { response, start, callbackUrl } = await loginUntilCallback("cb-replay");
    expect(response.status).toBe(200);

    const body = await readEnvelope(await visitCallback(callbackUrl, start.cookie, "application/json"), 400);

    expect(body.Status.Message).toMatch(/already used/);
  });

  it("should answer 502 when the provider does not accept the code", async () => {
    const start = await startLogin();
    const callbackUrl = await signInAtProvider(start.authorizeUrl, "cb-tampered");
    callbackUrl.searchParams.set("code", `${callbackUrl.searchParams.get("code")}x`);
    const log = vi.spyOn(console, "warn").mockImplementation(() => {});

    const body = await readEnvelope(await visitCallback(callbackUrl, start.cookie, "text/html"), 502);

    expect(body.Status.Message).toMatch(/identity provider's answer could not be verified/);
    expect(JSON.stringify(body)).not.toContain("invalid_grant");
    expect(String(log.mock.calls[0]?.[0])).toContain("invalid_grant");
    expect(await accountOf("cb-tampered")).toMatchObject({ accounts: 0 });
  });

  it("should answer 502 when the ID token does not carry the login's nonce", async () => {
    const start = await startLogin();
    const callbackUrl = await signInAtProvider(start.authorizeUrl, "cb-nonce", undefined, { nonce: "another-login" });
    vi.spyOn(console, "warn").mockImplementation(() => {});

    await readEnvelope(await visitCallback(callbackUrl, start.cookie, "text/html"), 502);

    expect(await accountOf("cb-nonce")).toMatchObject({ accounts: 0 });
  });

  it("should answer 401 when the provider reports that it did not log the user in", async () => {
    const start = await startLogin();
    const denied = `${ORIGIN}/v1/auth/callback?state=${start.state}&error=access_denied`;

    const body = await readEnvelope(await visitCallback(denied, start.cookie, "text/html"), 401);

    expect(body.Status.Message).toMatch(/did not log you in \(access_denied\)/);
  });

  it("should refuse a login that was started more than ten minutes ago", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const start = await startLogin();
    const callbackUrl = await signInAtProvider(start.authorizeUrl, "cb-slow");
    vi.setSystemTime(Date.now() + 601_000);

    const body = await readEnvelope(await visitCallback(callbackUrl, start.cookie, "application/json"), 400);

    expect(body.Status.Message).toMatch(/expired/);
  });

  it("should create the user's account on first login, named after the username", async () => {
    expect(await accountOf("cb-first-erin")).toMatchObject({ accounts: 0 });

    const { response } = await loginUntilCallback("cb-first-erin");

    expect(response.status).toBe(200);
    expect(await accountOf("cb-first-erin")).toMatchObject({ accounts: 1, name: "cb-first-erin" });
  });

  it("should sanitize a username that breaks the account name rules", async () => {
    const tokens = await login("cb.jane.doe");

    expect(tokens.accountName).toBe("cb-jane-doe");
    expect(await accountOf("cb.jane.doe")).toMatchObject({ accounts: 1, name: "cb-jane-doe" });
  });

  it("should give a second user whose name is taken a unique name", async () => {
    const first = await login("cb-taken");
    const second = await login("cb.taken");

    expect(first.accountName).toBe("cb-taken");
    expect(second.accountName).toBe("cb-taken-2");
  });

  it("should show the terms page, and no tokens, to a user who has not accepted the terms", async () => {
    const { response, start } = await loginUntilCallback("cb-terms-page");

    const html = await response.text();
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(isTermsPage(html)).toBe(true);
    expect(html).toContain('<strong id="terms-version">1</strong>');
    expect(formFields(html)).toEqual({ state: start.state });
    expect(html).not.toContain("access-token");
    expect(await accountOf("cb-terms-page")).toMatchObject({ sessions: 0 });
  });

  it("should answer 401 to a JSON callback while the terms are not accepted", async () => {
    const { response } = await loginUntilCallback("cb-json-terms", "application/json");

    const body = await readEnvelope(response, 401);

    expect(body.Status.Message).toMatch(/not accepted the current terms of service \(version 1\)/);
    expect(await accountOf("cb-json-terms")).toMatchObject({ sessions: 0 });
  });

  it("should show the tokens straight away on a later login, for the same account", async () => {
    const first = await login("cb-returning");

    const { response } = await loginUntilCallback("cb-returning");

    const html = await response.text();
    expect(isTermsPage(html)).toBe(false);
    const again = tokensFromPage(html);
    expect(again.accountName).toBe(first.accountName);
    expect(again.accessToken).not.toBe(first.accessToken);
    expect(await accountOf("cb-returning")).toMatchObject({ accounts: 1, sessions: 2 });
    expect((await call("/v1/me/datasets", { headers: authHeader(again.accessToken) })).status).toBe(200);
  });

  it("should answer a later login with the JwtResponse when asked for JSON", async () => {
    await login("cb-returning-json");

    const { response } = await loginUntilCallback("cb-returning-json", "application/json");

    const body = await readEnvelope<JwtData>(response, 200);
    expect(body.Data.TokenType).toBe("Bearer");
    expect((await call("/v1/me/datasets", { headers: authHeader(body.Data.AccessToken) })).status).toBe(200);
  });
});

describe("POST /v1/auth/terms", () => {
  it("should show a tokens page with working tokens once the terms are accepted", async () => {
    const { start } = await loginUntilCallback("terms-html");

    const response = await acceptTerms(start.state, start.cookie, "text/html");

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const tokens = tokensFromPage(await response.text());
    expect(tokens.accountName).toBe("terms-html");
    expect(tokens.accessTokenExpiresOn).toMatch(ISO_UTC_SECONDS);
    expect(tokens.refreshTokenExpiresOn).toMatch(ISO_UTC_SECONDS);
    expect((await call("/v1/me/datasets", { headers: authHeader(tokens.accessToken) })).status).toBe(200);
    const renewed = await call("/v1/auth/token", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ RefreshToken: tokens.refreshToken }),
    });
    expect(renewed.status).toBe(200);
  });

  it("should offer a Copy button for each token, hidden until this origin's script shows them", async () => {
    // A limiter of its own: the file's other logins use up the client address's minute.
    const via = workerWith({ AUTH_RATE_LIMITER: { limit: async () => ({ success: true }) } });
    const { start } = await loginUntilCallback("terms-copy", "text/html", via);

    const response = await acceptTerms(start.state, start.cookie, "text/html", via);

    const html = await response.text();
    const buttons = [...html.matchAll(/<button\b[^>]*\bdata-copy="([^"]*)"[^>]*>/g)];
    expect(buttons.map((match) => match[1])).toEqual(["access-token", "refresh-token"]);
    // Hidden in the HTML: without JavaScript the page shows just the tokens, in their read-only text areas.
    for (const [button] of buttons) expect(button).toMatch(/\shidden[\s>]/);
    expect(tokensFromPage(html).accessToken.split(".")).toHaveLength(3);
    expect(html).toContain('<script src="/assets/copy-buttons.js"></script>');
    expect(response.headers.get("content-security-policy")).toContain("script-src 'self'");
    const script = await call("/assets/copy-buttons.js");
    expect(script.status).toBe(200);
    // With nosniff a browser runs the file only if it is served as JavaScript.
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(script.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await script.text()).toContain("navigator.clipboard.writeText");
  });

  it("should clear the login cookie once the tokens are shown", async () => {
    const { start } = await loginUntilCallback("terms-cookie");

    const response = await acceptTerms(start.state, start.cookie, "text/html");

    expect(response.headers.getSetCookie()).toEqual([expect.stringMatching(/^dqs_login=;.*Max-Age=0/i)]);
  });

  it("should answer with the JwtResponse for Accept: application/json", async () => {
    const { start } = await loginUntilCallback("terms-json");

    const body = await readEnvelope<JwtData>(await acceptTerms(start.state, start.cookie, "application/json"), 200);

    expect(body.Data.TokenType).toBe("Bearer");
    expect(body.Data.AccessToken.split(".")).toHaveLength(3);
    expect(body.Data.RefreshToken).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    expect(body.Data.AccessTokenExpiresOn).toMatch(ISO_UTC_SECONDS);
    expect(body.Data.RefreshTokenExpiresOn).toMatch(ISO_UTC_SECONDS);
    expect(secondsUntil(body.Data.AccessTokenExpiresOn)).toBeGreaterThan(3600 - 10);
    expect(secondsUntil(body.Data.AccessTokenExpiresOn)).toBeLessThanOrEqual(3600);
    expect(secondsUntil(body.Data.RefreshTokenExpiresOn)).toBeGreaterThan(45 * 86400 - 10);
    expect(secondsUntil(body.Data.RefreshTokenExpiresOn)).toBeLessThanOrEqual(45 * 86400);
  });

  it.each([
    ["application/json, text/html;q=0.9", "json"],
    ["text/html;q=0.5, application/json", "json"],
    ["application/*", "json"],
    ["text/html, application/json;q=0.9", "html"],
    ["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "html"],
    ["*/*", "html"],
  ])("should negotiate the tokens' form by q-values: Accept %s gets %s", async (accept, form) => {
    // These logins pass a limiter of their own: the file's other logins use up the client address's minute.
    const via = workerWith({ AUTH_RATE_LIMITER: { limit: async () => ({ success: true }) } });
    const { start } = await loginUntilCallback(`terms-q-${crypto.randomUUID().slice(0, 8)}`, "text/html", via);

    const response = await acceptTerms(start.state, start.cookie, accept, via);

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(form === "json" ? /^application\/json/ : /^text\/html/);
  });

  it("should record the accepted terms version", async () => {
    await login("terms-recorded");

    const row = await env.DB.prepare(
      "SELECT terms_version AS version, terms_accepted_at AS at FROM users WHERE subject = ?",
    )
      .bind("dev|terms-recorded")
      .first<{ version: string; at: string }>();
    expect(row).toEqual({ version: "1", at: expect.stringMatching(ISO_UTC_SECONDS) });
  });

  it("should refuse an acceptance that comes without the login cookie", async () => {
    const { start } = await loginUntilCallback("terms-no-cookie");

    const body = await readEnvelope(await acceptTerms(start.state, null, "application/json"), 400);

    expect(body.Status.Message).toMatch(/not started in this browser/);
    expect(await accountOf("terms-no-cookie")).toMatchObject({ sessions: 0 });
  });

  it("should refuse a login that has not yet been through the provider", async () => {
    const start = await startLogin();

    const body = await readEnvelope(await acceptTerms(start.state, start.cookie, "application/json"), 400);

    expect(body.Status.Message).toMatch(/unknown, already used or expired/);
  });

  it("should refuse to accept twice with the same login", async () => {
    const { start } = await loginUntilCallback("terms-twice");
    expect((await acceptTerms(start.state, start.cookie, "application/json")).status).toBe(200);

    const body = await readEnvelope(await acceptTerms(start.state, start.cookie, "application/json"), 400);

    expect(body.Status.Message).toMatch(/already used/);
    expect(await accountOf("terms-twice")).toMatchObject({ sessions: 1 });
  });

  it("should require the accept field of the form", async () => {
    const { start } = await loginUntilCallback("terms-no-accept");

    const response = await call("/v1/auth/terms", {
      method: "POST",
      headers: { cookie: start.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ state: start.state }),
    });

    const body = await readEnvelope(response, 400);
    expect(body.Status.Message).toMatch(/accept/);
    expect(await accountOf("terms-no-accept")).toMatchObject({ sessions: 0 });
  });
});

describe("an identity provider that fails", () => {
  const UNREACHABLE = /^The identity provider could not be reached .*; try again later\.$/;
  // This file's logins come from one unknown address and would use up its minute's allowance.
  const UNLIMITED: RateLimit = { limit: async () => ({ success: true }) };

  /** A deployment with its own external provider, whose every answer comes from `answer` (outbound fetch stubbed). */
  function withProvider(answer: (url: URL, issuer: string) => Promise<Response>): Fetch {
    const issuer = `https://${crypto.randomUUID()}.idp.test`;
    vi.spyOn(globalThis, "fetch").mockImplementation((input) =>
      answer(new URL(input instanceof Request ? input.url : String(input)), issuer),
    );
    vi.spyOn(console, "warn").mockImplementation(() => {});
    return workerWith({ OIDC_ISSUER: issuer, OIDC_CLIENT_SECRET: "the-secret", AUTH_RATE_LIMITER: UNLIMITED });
  }

  /** A discovery document, and `token` for the token endpoint. */
  function discoveryThen(token: () => Promise<Response>) {
    return (url: URL, issuer: string) =>
      url.pathname === "/.well-known/openid-configuration"
        ? Promise.resolve(
            Response.json({
              issuer,
              authorization_endpoint: `${issuer}/authorize`,
              token_endpoint: `${issuer}/token`,
              jwks_uri: `${issuer}/jwks`,
            }),
          )
        : token();
  }

  it("should answer GET /v1/auth with 502 when OIDC_ISSUER points where nothing listens", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const closedPort = workerWith({
      OIDC_ISSUER: "http://127.0.0.1:1",
      OIDC_CLIENT_SECRET: "the-secret",
      AUTH_RATE_LIMITER: UNLIMITED,
    });

    const body = await readEnvelope(await call("/v1/auth", {}, closedPort), 502);

    expect(body.Status.Message).toMatch(UNREACHABLE);
  });

  it.each([
    ["a network failure", () => Promise.reject(new TypeError("Network connection lost.")), UNREACHABLE],
    ["a timeout", () => Promise.reject(new DOMException("timed out", "TimeoutError")), UNREACHABLE],
    ["a 503", async () => new Response("down", { status: 503 }), UNREACHABLE],
    ["an HTML page", async () => new Response("<html>login</html>", { status: 200 }), /answer could not be verified/],
  ])("should answer GET /v1/auth with 502 when discovery meets %s", async (_what, answer, message) => {
    const via = withProvider(answer);

    const response = await call("/v1/auth", {}, via);

    const body = await readEnvelope(response, 502);
    expect(body.Status.Message).toMatch(message);
    expect(response.headers.get("set-cookie")).toBeNull();
  });

  it.each([
    ["a network failure", () => Promise.reject(new TypeError("Network connection lost.")), UNREACHABLE],
    ["a 500", async () => new Response("oops", { status: 500 }), UNREACHABLE],
    ["text that is not JSON", async () => new Response("not json"), /answer could not be verified/],
  ])("should answer the callback with 502 when the token endpoint meets %s", async (_what, answer, message) => {
    const via = withProvider(discoveryThen(answer));
    const start = await startLogin(via);
    const callbackUrl = `${ORIGIN}/v1/auth/callback?state=${start.state}&code=the-code`;

    const body = await readEnvelope(await visitCallback(callbackUrl, start.cookie, "text/html", via), 502);

    expect(body.Status.Message).toMatch(message);
  });

  it("should send a command-line login back with error=temporarily_unavailable when the token endpoint is down", async () => {
    const via = withProvider(discoveryThen(async () => new Response("down", { status: 503 })));
    const redirectUri = "http://127.0.0.1:53682/callback";
    const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    const started = await call(
      `/v1/auth?redirect_uri=${encodeURIComponent(redirectUri)}&code_challenge=${challenge}&code_challenge_method=S256&state=cli`,
      {},
      via,
    );
    const state = new URL(started.headers.get("location") ?? "").searchParams.get("state") ?? "";
    const cookie = started.headers.getSetCookie()[0]?.split(";")[0] ?? "";

    const response = await visitCallback(`${ORIGIN}/v1/auth/callback?state=${state}&code=c`, cookie, "text/html", via);

    expect(response.status).toBe(302);
    const location = new URL(response.headers.get("location") ?? "");
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
    expect(Object.fromEntries(location.searchParams)).toEqual({ error: "temporarily_unavailable", state: "cli" });
  });
});
