import { env } from "cloudflare:workers";
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import {
  ACCESS_TOKEN_TTL_SECONDS,
  AUDIENCE,
  issueAccessToken,
  verifyAccessToken,
} from "../../src/worker/auth/access-token";
import { loadKeys, type KeySet } from "../../src/worker/auth/keys";
import { requestConfig } from "../../src/worker/config";
import { ORIGIN } from "../support/http";
import { login } from "../support/login";
import { signToken, testSigningKey, unsignedToken } from "../support/tokens";

let keys: KeySet;

beforeAll(async () => {
  keys = await loadKeys(env, requestConfig(env, ORIGIN));
});

describe("access tokens issued at login", () => {
  it("should carry the header typ at+jwt, alg ES256 and the signing key's kid", async () => {
    const { accessToken } = await login("at-header");

    expect(decodeProtectedHeader(accessToken)).toEqual({
      typ: "at+jwt",
      alg: "ES256",
      kid: (await testSigningKey()).kid,
    });
  });

  it("should carry iss, aud dqs, the user as sub, iat, exp one hour later, jti and the session id", async () => {
    const before = Math.floor(Date.now() / 1000);
    const { accessToken } = await login("at-claims");

    const claims = decodeJwt(accessToken);
    const user = await env.DB.prepare("SELECT id FROM users WHERE subject = ?")
      .bind("dev|at-claims")
      .first<{ id: string }>();
    const session = await env.DB.prepare("SELECT user_id AS userId FROM sessions WHERE id = ?")
      .bind(String(claims.sid))
      .first<{ userId: string }>();
    expect(claims).toEqual({
      iss: ORIGIN,
      aud: "dqs",
      sub: user?.id,
      iat: expect.any(Number),
      exp: Number(claims.iat) + 3600,
      jti: expect.stringMatching(/^[A-Za-z0-9_-]{16,}$/),
      sid: expect.any(String),
    });
    expect(Number(claims.iat)).toBeGreaterThanOrEqual(before);
    expect(Number(claims.iat)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(session?.userId).toBe(user?.id);
  });

  it("should give every token its own jti", async () => {
    const first = decodeJwt((await login("at-jti")).accessToken);
    const second = decodeJwt((await login("at-jti")).accessToken);

    expect(first.jti).not.toBe(second.jti);
    expect(first.sid).not.toBe(second.sid);
  });
});

describe("issueAccessToken and verifyAccessToken", () => {
  const subject = { userId: "user-1", sessionId: "session-1" };

  it("should verify a token it issued and give back the user and session", async () => {
    const { token, expiresAt } = await issueAccessToken(keys, ORIGIN, subject);

    expect(expiresAt - Math.floor(Date.now() / 1000)).toBeGreaterThan(ACCESS_TOKEN_TTL_SECONDS - 5);
    expect(await verifyAccessToken(keys, ORIGIN, token)).toEqual({ ok: true, claims: subject });
  });

  it("should refuse a token issued under another issuer", async () => {
    const { token } = await issueAccessToken(keys, "https://other.example", subject);

    expect(await verifyAccessToken(keys, ORIGIN, token)).toEqual({ ok: false, reason: "wrong_claims" });
  });

  it.each([
    ["malformed", async () => "a.b.c"],
    ["wrong_algorithm", async () => unsignedToken({ typ: "at+jwt" }, base())],
    [
      "wrong_algorithm",
      async () => new SignJWT(base()).setProtectedHeader({ alg: "HS256", typ: "at+jwt" }).sign(new Uint8Array(32)),
    ],
    [
      "bad_signature",
      async () => signToken(base(), { key: (await generateKeyPair("ES256")).privateKey, kid: "test-key-1" }),
    ],
    ["wrong_claims", async () => signToken({ ...base(), aud: "elsewhere" })],
    ["wrong_claims", async () => signToken(base(), { typ: "JWT" })],
    ["wrong_claims", async () => signToken({ ...base(), jti: undefined })],
    ["expired", async () => signToken({ ...base(), exp: Math.floor(Date.now() / 1000) - 1 })],
  ])("should answer %s for a token built to fail that way", async (reason, build) => {
    expect(await verifyAccessToken(keys, ORIGIN, await build())).toEqual({ ok: false, reason });
  });

  function base() {
    const now = Math.floor(Date.now() / 1000);
    return { iss: ORIGIN, aud: AUDIENCE, sub: "user-1", sid: "session-1", iat: now, exp: now + 60, jti: "j" };
  }
});
