import { base64url, exportJWK, generateKeyPair, SignJWT, type JWTPayload } from "jose";
import { describe, expect, it } from "vitest";
import {
  authorizationUrl,
  discover,
  exchangeCode,
  ProviderError,
  verifyIdToken,
  type ProviderClient,
  type ProviderFetch,
  type ProviderMetadata,
} from "../../src/worker/auth/oidc-client";

const CLIENT_ID = "dqs-client";
const NONCE = "the-nonce";

/** An OpenID provider that lives in the test: discovery, JWKS and a token endpoint, each answer adjustable. */
async function fakeProvider(
  answers: { discovery?: (issuer: string) => Record<string, unknown> | number; token?: unknown } = {},
) {
  // Each provider has its own issuer, so the module's per-issuer caches never mix two of them.
  const issuer = `https://${crypto.randomUUID()}.idp.test`;
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" }] };
  const metadata: ProviderMetadata = {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    id_token_signing_alg_values_supported: ["ES256"],
  };
  const client: ProviderClient = { issuer, clientId: CLIENT_ID, clientSecret: "s3cret:&=", scopes: "openid profile" };
  const requests: Request[] = [];
  const providerFetch: ProviderFetch = async (url, init) => {
    const request = new Request(url, init);
    requests.push(request.clone());
    const path = new URL(url).pathname;
    if (path === "/.well-known/openid-configuration") {
      const discovery = answers.discovery?.(issuer) ?? metadata;
      return typeof discovery === "number" ? new Response("down", { status: discovery }) : Response.json(discovery);
    }
    if (path === "/jwks") return Response.json(jwks);
    if (path === "/token") return Response.json(answers.token ?? { id_token: "the-id-token" });
    return new Response("not found", { status: 404 });
  };
  const idToken = (claims: JWTPayload = {}, key: CryptoKey = privateKey) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: issuer,
      aud: CLIENT_ID,
      sub: "subject-1",
      iat: now,
      exp: now + 300,
      nonce: NONCE,
      ...claims,
    })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .sign(key);
  };
  return { issuer, metadata, client, providerFetch, requests, idToken };
}

describe("discover", () => {
  it("should read the provider's discovery document", async () => {
    const provider = await fakeProvider();

    expect(await discover(provider.issuer, provider.providerFetch)).toMatchObject(provider.metadata);
  });

  it("should refuse a document that names another issuer", async () => {
    const provider = await fakeProvider({
      discovery: (issuer) => ({
        issuer: "https://evil.test",
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
      }),
    });

    await expect(discover(provider.issuer, provider.providerFetch)).rejects.toBeInstanceOf(ProviderError);
  });

  it("should refuse a document without a token endpoint", async () => {
    const provider = await fakeProvider({
      discovery: (issuer) => ({ issuer, authorization_endpoint: `${issuer}/authorize`, jwks_uri: `${issuer}/jwks` }),
    });

    await expect(discover(provider.issuer, provider.providerFetch)).rejects.toThrow(/token_endpoint/);
  });

  it("should report a provider that is down as unreachable", async () => {
    const provider = await fakeProvider({ discovery: () => 503 });

    await expect(discover(provider.issuer, provider.providerFetch)).rejects.toMatchObject({
      message: expect.stringMatching(/503/),
      reason: "unreachable",
    });
  });

  it.each([
    ["a network failure", new TypeError("Network connection lost.")],
    ["a timeout", new DOMException("The operation timed out.", "TimeoutError")],
  ])("should report %s as an unreachable provider", async (_what, failure) => {
    const failing: ProviderFetch = () => Promise.reject(failure);

    const error = await discover(`https://${crypto.randomUUID()}.idp.test`, failing).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ reason: "unreachable" });
  });

  it("should give up on a provider that does not answer in time", async () => {
    let signal: AbortSignal | null | undefined;
    const recording: ProviderFetch = async (_url, init) => {
      signal = init?.signal;
      return new Response("{}");
    };

    await discover(`https://${crypto.randomUUID()}.idp.test`, recording).catch(() => {});

    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal?.aborted).toBe(false);
  });

  it.each(["<html>Service Unavailable</html>", "", "[]", "null"])(
    "should report a discovery answer that is not a JSON object (%j) as a bad answer",
    async (text) => {
      const notJson: ProviderFetch = async () => new Response(text, { headers: { "content-type": "text/html" } });

      await expect(discover(`https://${crypto.randomUUID()}.idp.test`, notJson)).rejects.toMatchObject({
        name: "ProviderError",
        reason: "bad_answer",
      });
    },
  );
});

describe("authorizationUrl", () => {
  it("should ask for a code with PKCE S256, state and nonce", async () => {
    const provider = await fakeProvider();

    const url = new URL(
      authorizationUrl(provider.metadata, provider.client, {
        redirectUri: "https://dqs.test/v1/auth/callback",
        state: "s",
        nonce: "n",
        codeChallenge: "c",
      }),
    );

    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: "https://dqs.test/v1/auth/callback",
      scope: "openid profile",
      state: "s",
      nonce: "n",
      code_challenge: "c",
      code_challenge_method: "S256",
    });
  });
});

describe("exchangeCode", () => {
  it("should send the code and PKCE verifier with client_secret_basic and return the ID token", async () => {
    const provider = await fakeProvider();

    const idToken = await exchangeCode(
      provider.metadata,
      provider.client,
      { code: "the-code", redirectUri: "https://dqs.test/cb", codeVerifier: "the-verifier" },
      provider.providerFetch,
    );

    expect(idToken).toBe("the-id-token");
    const request = provider.requests.at(-1)!;
    expect(request.method).toBe("POST");
    expect(request.headers.get("authorization")).toBe(
      `Basic ${btoa(`${CLIENT_ID}:${encodeURIComponent("s3cret:&=")}`)}`,
    );
    expect(Object.fromEntries(await request.formData())).toEqual({
      grant_type: "authorization_code",
      code: "the-code",
      redirect_uri: "https://dqs.test/cb",
      code_verifier: "the-verifier",
    });
  });

  it("should refuse a token response without an ID token", async () => {
    const provider = await fakeProvider({ token: { access_token: "x" } });

    await expect(
      exchangeCode(
        provider.metadata,
        provider.client,
        { code: "c", redirectUri: "r", codeVerifier: "v" },
        provider.providerFetch,
      ),
    ).rejects.toThrow(/no id_token/);
  });
});

describe("exchangeCode with a failing token endpoint", () => {
  const request = { code: "c", redirectUri: "r", codeVerifier: "v" };

  it.each([
    ["throws", (): Promise<Response> => Promise.reject(new TypeError("connect ECONNREFUSED")), "unreachable"],
    ["answers 502", async () => new Response("Bad Gateway", { status: 502 }), "unreachable"],
    ["answers HTML", async () => new Response("<html>oops</html>", { status: 200 }), "bad_answer"],
    ["refuses the code", async () => Response.json({ error: "invalid_grant" }, { status: 400 }), "bad_answer"],
  ])("should report a token endpoint that %s as %s", async (_what, answer, reason) => {
    const provider = await fakeProvider();

    const error = await exchangeCode(provider.metadata, provider.client, request, answer).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ reason });
  });
});

describe("verifyIdToken", () => {
  it("should give back the identity of a valid ID token", async () => {
    const provider = await fakeProvider();
    const token = await provider.idToken({ preferred_username: "alice", email: "alice@example.com" });

    expect(await verifyIdToken(provider.metadata, provider.client, token, NONCE, provider.providerFetch)).toEqual({
      issuer: provider.issuer,
      subject: "subject-1",
      preferredUsername: "alice",
      email: "alice@example.com",
    });
  });

  it.each([
    ["another nonce", { nonce: "other" }],
    ["no nonce", { nonce: undefined }],
    ["another audience", { aud: "someone-else" }],
    ["another issuer", { iss: "https://evil.test" }],
    ["an expiry well in the past", { exp: Math.floor(Date.now() / 1000) - 120 }],
    ["several audiences and no azp naming this client", { aud: [CLIENT_ID, "other"] }],
  ])("should refuse an ID token with %s", async (_, claims) => {
    const provider = await fakeProvider();

    const token = await provider.idToken(claims);

    await expect(
      verifyIdToken(provider.metadata, provider.client, token, NONCE, provider.providerFetch),
    ).rejects.toBeInstanceOf(ProviderError);
  });

  it("should refuse an ID token signed by a key the provider does not publish", async () => {
    const provider = await fakeProvider();
    const { privateKey } = await generateKeyPair("ES256");

    const token = await provider.idToken({}, privateKey);

    await expect(
      verifyIdToken(provider.metadata, provider.client, token, NONCE, provider.providerFetch),
    ).rejects.toBeInstanceOf(ProviderError);
  });

  it("should report a JWKS that cannot be fetched as an unreachable provider, not a bad token", async () => {
    const provider = await fakeProvider();
    const token = await provider.idToken();
    const jwksDown: ProviderFetch = (url, init) =>
      new URL(url).pathname === "/jwks"
        ? Promise.reject(new TypeError("Network connection lost."))
        : provider.providerFetch(url, init);

    const error = await verifyIdToken(provider.metadata, provider.client, token, NONCE, jwksDown).catch(
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ reason: "unreachable" });
  });

  it("should refuse an unsigned ID token even from a provider that lists alg none", async () => {
    const provider = await fakeProvider();
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: provider.issuer, aud: CLIENT_ID, sub: "s", iat: now, exp: now + 300, nonce: NONCE };
    const token = `${base64url.encode(JSON.stringify({ alg: "none" }))}.${base64url.encode(JSON.stringify(claims))}.`;
    const metadata = { ...provider.metadata, id_token_signing_alg_values_supported: ["none", "ES256"] };

    await expect(verifyIdToken(metadata, provider.client, token, NONCE, provider.providerFetch)).rejects.toBeInstanceOf(
      ProviderError,
    );
  });
});
