import { env } from "cloudflare:workers";
import { decodeProtectedHeader, exportJWK, generateKeyPair, type JSONWebKeySet, type JWK } from "jose";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { issueAccessToken, verifyAccessToken } from "../../src/worker/auth/access-token";
import { loadKeys } from "../../src/worker/auth/keys";
import { ConfigError, requestConfig } from "../../src/worker/config";
import { call, ORIGIN, postJson, readEnvelope, readUnauthorized, workerWith, type Fetch } from "../support/http";
import { authHeader, login, type JwtData, type LoggedIn } from "../support/login";
import { newSigningJwk, testSigningKey } from "../support/tokens";

const config = requestConfig(env, ORIGIN);

afterEach(() => {
  vi.restoreAllMocks();
});

describe("loadKeys", () => {
  it("should sign with the first key and verify with every key", async () => {
    const [newer, older] = [await newSigningJwk("newer"), await newSigningJwk("older")];
    const oldKeys = await loadKeys({ ...env, SIGNING_KEYS: JSON.stringify([older]) }, config);
    const bothKeys = await loadKeys({ ...env, SIGNING_KEYS: JSON.stringify([newer, older]) }, config);
    const subject = { userId: "u", sessionId: "s" };

    const signedBefore = await issueAccessToken(oldKeys, ORIGIN, subject);
    const signedAfter = await issueAccessToken(bothKeys, ORIGIN, subject);

    expect(bothKeys.signingKid).toBe("newer");
    expect(decodeProtectedHeader(signedAfter.token).kid).toBe("newer");
    expect(await verifyAccessToken(bothKeys, ORIGIN, signedBefore.token)).toMatchObject({ ok: true });
    expect(await verifyAccessToken(bothKeys, ORIGIN, signedAfter.token)).toMatchObject({ ok: true });
    expect(await verifyAccessToken(oldKeys, ORIGIN, signedAfter.token)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("should publish the public halves of all keys and never the private part", async () => {
    const keys = await loadKeys(
      { ...env, SIGNING_KEYS: JSON.stringify([await newSigningJwk("a"), await newSigningJwk("b")]) },
      config,
    );

    expect(keys.publicJwks.keys.map((key) => key.kid)).toEqual(["a", "b"]);
    for (const key of keys.publicJwks.keys) {
      expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
      expect(key).not.toHaveProperty("d");
    }
  });

  it.each([
    ["not JSON", "{"],
    ["an empty list", "[]"],
    ["a public key only", async () => JSON.stringify([{ ...(await publicJwk()), kid: "pub" }])],
    ["a key without kid", async () => JSON.stringify([{ ...(await newSigningJwk("x")), kid: undefined }])],
    ["a key of another curve", async () => JSON.stringify([{ ...(await ed25519Jwk()), kid: "ed" }])],
  ])("should refuse SIGNING_KEYS that is %s", async (_, source) => {
    const signingKeys = typeof source === "string" ? source : await source();

    await expect(loadKeys({ ...env, SIGNING_KEYS: signingKeys }, config)).rejects.toBeInstanceOf(ConfigError);
  });

  it("should generate a development key once and keep it in D1", async () => {
    const first = await loadKeys({ ...env, SIGNING_KEYS: "" }, config);
    const second = await loadKeys({ ...env, SIGNING_KEYS: "" }, config);

    expect(second.signingKid).toBe(first.signingKid);
    const row = await env.DB.prepare("SELECT jwks FROM dev_signing_keys WHERE id = 1").first<{ jwks: string }>();
    expect((JSON.parse(row?.jwks ?? "[]") as JWK[]).map((key) => key.kid)).toEqual([first.signingKid]);
  });

  it("should refuse to run without SIGNING_KEYS outside development", async () => {
    await expect(loadKeys({ ...env, SIGNING_KEYS: "" }, { ...config, development: false })).rejects.toBeInstanceOf(
      ConfigError,
    );
  });

  async function publicJwk(): Promise<JWK> {
    const { publicKey } = await generateKeyPair("ES256", { extractable: true });
    return exportJWK(publicKey);
  }

  async function ed25519Jwk(): Promise<JWK> {
    const { privateKey } = await generateKeyPair("Ed25519", { extractable: true });
    return exportJWK(privateKey);
  }
});

describe("key rotation", () => {
  let user: LoggedIn;
  let testKey: JWK;
  let newKey: JWK;
  let rotated: Fetch;

  beforeAll(async () => {
    user = await login("keys-rotation");
    testKey = (await testSigningKey()).jwk;
    newKey = await newSigningJwk("test-key-2");
    rotated = workerWith({ SIGNING_KEYS: JSON.stringify([newKey, testKey]) });
  });

  it("should still accept a token signed by the second key of SIGNING_KEYS", async () => {
    const response = await call("/v1/me/datasets", { headers: authHeader(user.accessToken) }, rotated);

    expect(response.status).toBe(200);
  });

  it("should sign new tokens with the first key", async () => {
    const body = await readEnvelope<JwtData>(
      await postJson("/v1/auth/token", { RefreshToken: user.refreshToken }, rotated),
      200,
    );

    expect(decodeProtectedHeader(body.Data.AccessToken).kid).toBe("test-key-2");
    expect((await call("/v1/me/datasets", { headers: authHeader(body.Data.AccessToken) }, rotated)).status).toBe(200);
  });

  it("should publish both keys while both are configured", async () => {
    const jwks = await (await call("/.well-known/jwks.json", {}, rotated)).json<JSONWebKeySet>();

    expect(jwks.keys.map((key) => key.kid)).toEqual(["test-key-2", testKey.kid]);
  });

  it("should refuse tokens of a key once it is removed", async () => {
    const { accessToken } = await login("keys-retired");
    const retired = workerWith({ SIGNING_KEYS: JSON.stringify([newKey]) });

    const response = await call("/v1/me/datasets", { headers: authHeader(accessToken) }, retired);

    expect(await readUnauthorized(response)).toMatch(/signature is not valid/);
  });
});
