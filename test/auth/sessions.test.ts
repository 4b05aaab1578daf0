import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256 } from "../../src/worker/util/crypto";
import { call, postJson, readEnvelope, readUnauthorized } from "../support/http";
import { authHeader, fromWire, login, type JwtData, type LoggedIn } from "../support/login";

const ISO_UTC_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const DAY_MS = 86_400_000;

function renew(refreshToken: string): Promise<Response> {
  return postJson("/v1/auth/token", { RefreshToken: refreshToken });
}

async function renewed(refreshToken: string): Promise<Omit<LoggedIn, "accountName">> {
  return fromWire((await readEnvelope<JwtData>(await renew(refreshToken), 200)).Data);
}

async function datasetsStatus(accessToken: string): Promise<number> {
  return (await call("/v1/me/datasets", { headers: authHeader(accessToken) })).status;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("POST /v1/auth/token", () => {
  it("should answer a JwtResponse with a new access token and a new refresh token", async () => {
    const tokens = await login("refresh-renew");

    const response = await renew(tokens.refreshToken);

    expect(response.headers.get("cache-control")).toBe("no-store");
    const { Data } = await readEnvelope<JwtData>(response, 200);
    expect(Data.TokenType).toBe("Bearer");
    expect(Data.AccessToken).not.toBe(tokens.accessToken);
    expect(Data.RefreshToken).not.toBe(tokens.refreshToken);
    expect(Data.AccessTokenExpiresOn).toMatch(ISO_UTC_SECONDS);
    expect(Data.RefreshTokenExpiresOn).toMatch(ISO_UTC_SECONDS);
    expect(Date.parse(Data.AccessTokenExpiresOn) - Date.now()).toBeGreaterThan(3600_000 - 10_000);
    expect(Date.parse(Data.RefreshTokenExpiresOn) - Date.now()).toBeGreaterThan(45 * DAY_MS - 10_000);
    expect(await datasetsStatus(Data.AccessToken)).toBe(200);
  });

  it("should keep renewed tokens in the session of the login", async () => {
    const tokens = await login("refresh-same-session");

    const next = await renewed(tokens.refreshToken);

    expect(decodeJwt(next.accessToken).sid).toBe(decodeJwt(tokens.accessToken).sid);
  });

  it("should rotate on every use, each new refresh token working once", async () => {
    const tokens = await login("refresh-chain");

    const second = await renewed(tokens.refreshToken);
    const third = await renewed(second.refreshToken);
    const fourth = await renewed(third.refreshToken);

    expect(new Set([tokens.refreshToken, second.refreshToken, third.refreshToken, fourth.refreshToken]).size).toBe(4);
    expect(await datasetsStatus(fourth.accessToken)).toBe(200);
  });

  it("should answer 401 to a refresh token that was already used", async () => {
    const tokens = await login("refresh-spent");
    await renewed(tokens.refreshToken);

    expect(await readUnauthorized(await renew(tokens.refreshToken))).toMatch(/already used.*revoked/);
  });

  it("should revoke the whole session when a rotated refresh token comes back", async () => {
    const tokens = await login("refresh-reuse");
    const next = await renewed(tokens.refreshToken);
    expect(await datasetsStatus(next.accessToken)).toBe(200);

    await renew(tokens.refreshToken);

    expect(await readUnauthorized(await renew(next.refreshToken))).toMatch(/session of this refresh token has ended/);
    expect(await readUnauthorized(await call("/v1/me/datasets", { headers: authHeader(next.accessToken) }))).toMatch(
      /session of this access token has ended/,
    );
    expect(await datasetsStatus(tokens.accessToken)).toBe(401);
  });

  it("should leave the user's other sessions alone when one is revoked", async () => {
    const laptop = await login("refresh-two-devices");
    const phone = await login("refresh-two-devices");
    await renewed(laptop.refreshToken);

    await renew(laptop.refreshToken);

    expect(await datasetsStatus(laptop.accessToken)).toBe(401);
    expect(await datasetsStatus(phone.accessToken)).toBe(200);
    expect((await renew(phone.refreshToken)).status).toBe(200);
  });

  it("should let only one of two simultaneous renewals with the same token succeed", async () => {
    const tokens = await login("refresh-race");

    const statuses = (await Promise.all([renew(tokens.refreshToken), renew(tokens.refreshToken)])).map((r) => r.status);

    expect(statuses.sort()).toEqual([200, 401]);
  });

  it("should answer 401 to a refresh token it never issued", async () => {
    expect(await readUnauthorized(await renew("a".repeat(43)))).toMatch(/refresh token is not valid/);
  });

  it("should not take an access token as a refresh token", async () => {
    const tokens = await login("refresh-wrong-token");

    expect(await readUnauthorized(await renew(tokens.accessToken))).toMatch(/refresh token is not valid/);
  });

  it("should take a refresh token for 45 days and no longer", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const start = Date.now();
    const early = await login("refresh-lifetime-early");
    const late = await login("refresh-lifetime-late");

    vi.setSystemTime(start + 45 * DAY_MS - 60_000);
    expect((await renew(early.refreshToken)).status).toBe(200);

    vi.setSystemTime(start + 45 * DAY_MS + 1_000);
    expect(await readUnauthorized(await renew(late.refreshToken))).toMatch(/refresh token has expired/);
  });

  it("should refuse a refresh token whose stored expiry has passed", async () => {
    const tokens = await login("refresh-expired-row");
    await env.DB.prepare("UPDATE refresh_tokens SET expires_at = ? WHERE token_hash = ?")
      .bind("2000-01-01T00:00:00Z", await sha256(tokens.refreshToken))
      .run();

    expect(await readUnauthorized(await renew(tokens.refreshToken))).toMatch(/expired/);
  });

  it("should store refresh tokens only as hashes", async () => {
    const tokens = await login("refresh-hashed");

    const { results } = await env.DB.prepare("SELECT token_hash AS hash FROM refresh_tokens").all<{ hash: string }>();
    const hashes = results.map((row) => row.hash);
    expect(hashes).toContain(await sha256(tokens.refreshToken));
    expect(hashes).not.toContain(tokens.refreshToken);
  });

  it("should hand out refresh tokens of at least 256 random bits", async () => {
    const tokens = await login("refresh-entropy");

    expect(tokens.refreshToken).toMatch(/^[A-Za-z0-9_-]{43,}$/);
  });
});

describe("POST /v1/auth/logout", () => {
  it("should end the session: its access and refresh tokens stop working", async () => {
    const tokens = await login("logout-basic");

    const body = await readEnvelope(
      await call("/v1/auth/logout", { method: "POST", headers: authHeader(tokens.accessToken) }),
      200,
    );

    expect(body.Status.Message).toMatch(/Logged out/);
    expect(await readUnauthorized(await call("/v1/me/datasets", { headers: authHeader(tokens.accessToken) }))).toMatch(
      /session of this access token has ended/,
    );
    expect(await readUnauthorized(await renew(tokens.refreshToken))).toMatch(/session of this refresh token has ended/);
  });

  it("should end tokens renewed earlier in the session too", async () => {
    const tokens = await login("logout-renewed");
    const next = await renewed(tokens.refreshToken);

    await call("/v1/auth/logout", { method: "POST", headers: authHeader(tokens.accessToken) });

    expect(await datasetsStatus(next.accessToken)).toBe(401);
    expect((await renew(next.refreshToken)).status).toBe(401);
  });

  it("should leave the user's other sessions working", async () => {
    const here = await login("logout-other-session");
    const there = await login("logout-other-session");

    await call("/v1/auth/logout", { method: "POST", headers: authHeader(here.accessToken) });

    expect(await datasetsStatus(there.accessToken)).toBe(200);
    expect((await renew(there.refreshToken)).status).toBe(200);
  });

  it("should require an access token", async () => {
    expect(await readUnauthorized(await call("/v1/auth/logout", { method: "POST" }))).toMatch(/Missing bearer token/);
  });

  it("should answer 401 to a second logout with the same token", async () => {
    const tokens = await login("logout-twice");
    await call("/v1/auth/logout", { method: "POST", headers: authHeader(tokens.accessToken) });

    const response = await call("/v1/auth/logout", { method: "POST", headers: authHeader(tokens.accessToken) });

    expect(await readUnauthorized(response)).toMatch(/session of this access token has ended/);
  });
});
