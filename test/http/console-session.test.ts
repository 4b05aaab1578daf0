import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, ORIGIN, readEnvelope, readUnauthorized, workerWith, type Fetch } from "../support/http";
import { authHeader, consoleSignIn, login } from "../support/login";
import { uniqueName } from "../support/catalog";

// Many sign-ins in one file: the per-address limit of the auth endpoints would trip.
const app: Fetch = workerWith({ AUTH_RATE_LIMITER: { limit: async () => ({ success: true }) } });

/** The console's proof that a change comes from its own page: this origin, and its header. */
const FROM_CONSOLE = { origin: ORIGIN, "x-dqs-console": "1" };

function withCookie(cookie: string, init: RequestInit = {}): RequestInit {
  const headers = new Headers(init.headers);
  headers.set("cookie", cookie);
  return { ...init, headers };
}

/** Creates a dataset with the console's cookie, as the console does. */
function putDataset(cookie: string, account: string, name: string, headers: Record<string, string>) {
  return call(`/v1/dataset/${account}/${name}`, withCookie(cookie, { method: "PUT", headers }), app);
}

describe("console sign-in", () => {
  it("should end in an HttpOnly, SameSite=Strict session cookie and a redirect to the console, showing no token", async () => {
    const user = uniqueName("cs");
    const signIn = await consoleSignIn(user, app);

    expect(signIn.location).toBe("/console/");
    const attributes = signIn.setCookie.split(";").map((part) => part.trim().toLowerCase());
    expect(attributes).toContain("httponly");
    expect(attributes).toContain("samesite=strict");
    expect(attributes).toContain("path=/");
    // Plain http in this configuration: a Secure cookie would never come back.
    expect(attributes).not.toContain("secure");
    expect(signIn.cookie).toMatch(/^dqs_console=[A-Za-z0-9_-]{43}$/);

    const session = await readEnvelope<{ AccountName: string }>(
      await call("/console/session", withCookie(signIn.cookie), app),
      200,
    );
    expect(session.Data.AccountName).toBe(user);
  });

  it("should skip the terms for someone who accepted them, and set a __Host- Secure cookie over https", async () => {
    const user = uniqueName("cs");
    await consoleSignIn(user, app);
    const https = workerWith({
      AUTH_RATE_LIMITER: { limit: async () => ({ success: true }) },
      PUBLIC_URL: "https://dqs.test",
    });

    const again = await consoleSignIn(user, https);

    expect(again.cookie).toMatch(/^__Host-dqs_console=/);
    const attributes = again.setCookie.split(";").map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(["secure", "httponly", "samesite=strict", "path=/"]));
  });

  it("should store only a hash of the cookie, beside a session that has no refresh token", async () => {
    const signIn = await consoleSignIn(uniqueName("cs"), app);
    const value = signIn.cookie.split("=")[1]!;

    const rows = await env.DB.prepare(
      "SELECT c.token_hash AS hash, (SELECT count(*) FROM refresh_tokens r WHERE r.session_id = c.session_id) AS refresh FROM console_sessions c",
    ).all<{ hash: string; refresh: number }>();
    expect(rows.results.some((row) => row.hash === value)).toBe(false);
    expect(rows.results.every((row) => row.refresh === 0)).toBe(true);
  });

  it("should answer /console/session without a cookie with nobody, not an error the browser would log", async () => {
    const nobody = await readEnvelope<{ AccountName: string | null }>(await call("/console/session", {}, app), 200);
    expect(nobody.Data.AccountName).toBeNull();
    expect(nobody.Status.Message).toMatch(/sign in at \/console\/sign-in/);
  });

  it("should still answer a bad bearer token on /console/session with 401", async () => {
    expect(await readUnauthorized(await call("/console/session", { headers: authHeader("not-a-jwt") }, app))).toBe(
      "The access token is not a well-formed JWT.",
    );
  });
});

describe("cookie-authenticated API requests", () => {
  it("should read with the cookie alone", async () => {
    const user = uniqueName("cs");
    const { cookie } = await consoleSignIn(user, app);

    const datasets = await readEnvelope<{ DatasetCount: number }>(
      await call("/v1/me/datasets", withCookie(cookie), app),
      200,
    );
    expect(datasets.Data.DatasetCount).toBe(0);
  });

  it("should refuse a change without the console's header or from another origin (403), and allow it with both", async () => {
    const user = uniqueName("cs");
    const { cookie } = await consoleSignIn(user, app);

    const refused = [
      await putDataset(cookie, user, "a", {}),
      await putDataset(cookie, user, "a", { origin: ORIGIN }),
      await putDataset(cookie, user, "a", { "x-dqs-console": "1" }),
      await putDataset(cookie, user, "a", { origin: "https://evil.example", "x-dqs-console": "1" }),
      await putDataset(cookie, user, "a", { origin: "null", "x-dqs-console": "1" }),
    ];
    for (const response of refused)
      expect((await readEnvelope(response, 403)).Status.Message).toMatch(/must come from the console/);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM datasets WHERE name = 'a'").first("n")).toBe(0);

    await readEnvelope(await putDataset(cookie, user, "a", FROM_CONSOLE), 201);
  });

  it("should judge a request with an Authorization header by the header alone", async () => {
    const bearer = await login(uniqueName("cs"), { via: app });
    const { cookie } = await consoleSignIn(uniqueName("cs"), app);

    // A bearer change needs no console header, whatever cookie comes along.
    const created = await call(
      `/v1/dataset/${bearer.accountName}/b`,
      withCookie(cookie, { method: "PUT", headers: authHeader(bearer.accessToken) }),
      app,
    );
    await readEnvelope(created, 201);
    // A bad bearer token is not rescued by a good cookie.
    const bad = await call("/v1/me/datasets", withCookie(cookie, { headers: authHeader("not-a-jwt") }), app);
    expect(await readUnauthorized(bad)).toBe("The access token is not a well-formed JWT.");
  });

  it("should answer 401 for a cookie nobody issued or one that expired", async () => {
    const unknown = await call("/v1/me/datasets", withCookie("dqs_console=forged"), app);
    expect(await readUnauthorized(unknown)).toMatch(/console session has ended/);

    const { cookie } = await consoleSignIn(uniqueName("cs"), app);
    await env.DB.prepare("UPDATE console_sessions SET expires_at = '2000-01-01T00:00:00Z'").run();
    expect(await readUnauthorized(await call("/v1/me/datasets", withCookie(cookie), app))).toMatch(
      /console session has ended/,
    );
  });

  it("should answer 401 once the terms change, pointing to the console's sign-in", async () => {
    const { cookie } = await consoleSignIn(uniqueName("cs"), app);
    const newTerms = workerWith({ TERMS_VERSION: "2" });

    const message = await readUnauthorized(await call("/v1/me/datasets", withCookie(cookie), newTerms));
    expect(message).toMatch(/terms of service \(version 2\).*\/console\/sign-in/);
  });
});

describe("console sign-out", () => {
  it("should need the console's header like any change", async () => {
    const { cookie } = await consoleSignIn(uniqueName("cs"), app);

    await readEnvelope(await call("/console/sign-out", withCookie(cookie, { method: "POST" }), app), 403);
    await readEnvelope(await call("/console/session", withCookie(cookie), app), 200);
  });

  it("should revoke the session and clear the cookie", async () => {
    const { cookie } = await consoleSignIn(uniqueName("cs"), app);

    const out = await call("/console/sign-out", withCookie(cookie, { method: "POST", headers: FROM_CONSOLE }), app);
    await readEnvelope(out, 200);

    const cleared = out.headers.getSetCookie().find((header) => header.startsWith("dqs_console="));
    expect(cleared).toMatch(/Max-Age=0/i);
    const session = await readEnvelope<{ AccountName: string | null }>(
      await call("/console/session", withCookie(cookie), app),
      200,
    );
    expect(session.Data.AccountName).toBeNull();
    expect(session.Status.Message).toMatch(/console session has ended/);
    await readUnauthorized(await call("/v1/me/datasets", withCookie(cookie), app));
    const revoked = await env.DB.prepare(
      "SELECT count(*) AS n FROM sessions WHERE revoked_reason = 'signed out of the console'",
    ).first<number>("n");
    expect(revoked).toBeGreaterThan(0);
  });
});
