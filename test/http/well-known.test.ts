import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import { describe, expect, it } from "vitest";
import { call, ORIGIN } from "../support/http";
import { login } from "../support/login";
import { testSigningKey } from "../support/tokens";

describe("GET /.well-known/jwks.json", () => {
  it("should publish the public half of the signing key, without its private part", async () => {
    const response = await call("/.well-known/jwks.json");

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const { jwk } = await testSigningKey();
    const jwks = await response.json<JSONWebKeySet>();
    expect(jwks.keys).toEqual([
      { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, kid: jwk.kid, alg: "ES256", use: "sig" },
    ]);
    expect(JSON.stringify(jwks)).not.toContain(String(jwk.d));
  });

  it("should let anyone verify an access token offline with it", async () => {
    const { accessToken } = await login("jwks-verifier");
    const jwks = await (await call("/.well-known/jwks.json")).json<JSONWebKeySet>();

    const { payload, protectedHeader } = await jwtVerify(accessToken, createLocalJWKSet(jwks), {
      issuer: ORIGIN,
      audience: "dqs",
      algorithms: ["ES256"],
      typ: "at+jwt",
    });

    expect(protectedHeader.kid).toBe(jwks.keys[0]?.kid);
    expect(payload.sid).toEqual(expect.any(String));
  });

  it("should let caches keep it for a few minutes", async () => {
    const response = await call("/.well-known/jwks.json");

    expect(response.headers.get("cache-control")).toMatch(/public, max-age=\d+/);
  });
});
