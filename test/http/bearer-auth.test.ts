import {
  base64url,
  decodeJwt,
  exportSPKI,
  generateKeyPair,
  importJWK,
  SignJWT,
  type JSONWebKeySet,
  type JWTPayload,
} from "jose";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { call, ORIGIN, readUnauthorized } from "../support/http";
import { login, type LoggedIn } from "../support/login";
import { accessClaims, signToken, testSigningKey, unsignedToken } from "../support/tokens";

const MESSAGES = {
  missing: /^Missing bearer token/,
  scheme: /Authorization header must be 'Bearer <access token>'/,
  malformed: /not a well-formed JWT/,
  algorithm: /not signed with the algorithm this service uses \(ES256\)/,
  signature: /signature is not valid/,
  claims: /not issued for this service/,
  expired: /has expired; renew it with POST \/v1\/auth\/token/,
  session: /session of this access token has ended/,
};

let user: LoggedIn;
let claims: JWTPayload;

beforeAll(async () => {
  user = await login("bearer-user");
  claims = decodeJwt(user.accessToken);
});

afterEach(() => {
  vi.useRealTimers();
});

function datasets(authorization?: string): Promise<Response> {
  return call("/v1/me/datasets", { headers: authorization === undefined ? {} : { authorization } });
}

/** Fresh claims for the logged-in user's session, with some changed. */
function claimsWith(changes: JWTPayload): JWTPayload {
  return { ...accessClaims(String(claims.sub), String(claims.sid)), ...changes };
}

async function expectRejected(authorization: string | undefined, message: RegExp, error = "invalid_token") {
  const response = await datasets(authorization);
  expect(response.headers.get("www-authenticate")).toBe(`Bearer realm="dqs", error="${error}"`);
  expect(await readUnauthorized(response)).toMatch(message);
}

describe("requireAuth", () => {
  it("should let a valid access token through", async () => {
    expect((await datasets(`Bearer ${user.accessToken}`)).status).toBe(200);
  });

  it("should accept a token signed with the service's key for a live session", async () => {
    expect((await datasets(`Bearer ${await signToken(claimsWith({}))}`)).status).toBe(200);
  });

  it.each(["bearer", "BEARER", "bEaReR"])("should accept the scheme word written %s", async (scheme) => {
    expect((await datasets(`${scheme} ${user.accessToken}`)).status).toBe(200);
  });

  it("should refuse a request without an Authorization header", async () => {
    await expectRejected(undefined, MESSAGES.missing, "invalid_request");
  });

  it.each([
    ["another scheme", () => `Basic ${btoa("alice:secret")}`],
    ["a token without a scheme", () => user.accessToken],
    ["the scheme without a token", () => "Bearer"],
    ["two tokens", () => `Bearer ${user.accessToken} ${user.accessToken}`],
  ])("should refuse %s", async (_, header) => {
    await expectRejected(header(), MESSAGES.scheme, "invalid_request");
  });

  it("should refuse something that is not a JWT", async () => {
    await expectRejected("Bearer not-a-jwt", MESSAGES.malformed);
  });

  it("should refuse an unsigned token (alg none)", async () => {
    await expectRejected(`Bearer ${unsignedToken({ typ: "at+jwt" }, claimsWith({}))}`, MESSAGES.algorithm);
  });

  it("should refuse an HS256 token whose secret is the published public key", async () => {
    const jwks = await (await call("/.well-known/jwks.json")).json<JSONWebKeySet>();
    const publicJwk = jwks.keys[0]!;
    const pem = await exportSPKI(
      (await importJWK({ ...publicJwk, alg: "ES256" }, "ES256", { extractable: true })) as CryptoKey,
    );

    for (const secret of [pem, JSON.stringify(publicJwk)]) {
      const forged = await new SignJWT(claimsWith({}))
        .setProtectedHeader({ alg: "HS256", kid: publicJwk.kid, typ: "at+jwt" })
        .sign(new TextEncoder().encode(secret));
      await expectRejected(`Bearer ${forged}`, MESSAGES.algorithm);
    }
  });

  it("should refuse a token whose payload was changed after signing", async () => {
    const [header, , signature] = user.accessToken.split(".");
    const payload = base64url.encode(JSON.stringify({ ...claims, sub: "someone-else" }));

    await expectRejected(`Bearer ${header}.${payload}.${signature}`, MESSAGES.signature);
  });

  it("should refuse a token signed by another ES256 key under the service's kid", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const { kid } = await testSigningKey();

    await expectRejected(`Bearer ${await signToken(claimsWith({}), { key: privateKey, kid })}`, MESSAGES.signature);
  });

  it("should refuse a token signed by another ES256 key under an unknown kid", async () => {
    const { privateKey } = await generateKeyPair("ES256");

    await expectRejected(
      `Bearer ${await signToken(claimsWith({}), { key: privateKey, kid: "unknown" })}`,
      MESSAGES.signature,
    );
  });

  it.each([
    ["another issuer", { iss: "https://evil.example" }],
    ["another audience", { aud: "someone-else" }],
    ["no session id", { sid: undefined }],
  ])("should refuse a token with %s", async (_, changes) => {
    await expectRejected(`Bearer ${await signToken(claimsWith(changes))}`, MESSAGES.claims);
  });

  it("should refuse a token of another type, such as an ID token", async () => {
    await expectRejected(`Bearer ${await signToken(claimsWith({}), { typ: "JWT" })}`, MESSAGES.claims);
  });

  it("should refuse an ID token of the development provider used as an access token", async () => {
    const idToken = await signToken(claimsWith({ iss: `${ORIGIN}/idp`, aud: "dqs-dev", sub: "dev|bearer-user" }), {
      typ: "JWT",
    });

    await expectRejected(`Bearer ${idToken}`, MESSAGES.claims);
  });

  it("should refuse a token whose expiry has passed", async () => {
    const now = Math.floor(Date.now() / 1000);

    await expectRejected(
      `Bearer ${await signToken(claimsWith({ iat: now - 7200, exp: now - 3600 }))}`,
      MESSAGES.expired,
    );
  });

  it("should take an issued token for one hour and no longer", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const issuedAt = Number(claims.iat) * 1000;

    vi.setSystemTime(issuedAt + 3590_000);
    expect((await datasets(`Bearer ${user.accessToken}`)).status).toBe(200);

    vi.setSystemTime(issuedAt + 3601_000);
    await expectRejected(`Bearer ${user.accessToken}`, MESSAGES.expired);
  });

  it("should refuse a well-signed token for a session that does not exist", async () => {
    await expectRejected(`Bearer ${await signToken(claimsWith({ sid: "no-such-session" }))}`, MESSAGES.session);
  });

  it("should refuse a well-signed token whose subject is not the session's user", async () => {
    await expectRejected(`Bearer ${await signToken(claimsWith({ sub: "another-user" }))}`, MESSAGES.session);
  });
});
