import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256 } from "../../src/worker/util/crypto";
import { call, ORIGIN, readEnvelope, workerWith, type Fetch } from "../support/http";

const ISSUER = `${ORIGIN}/idp`;
const CALLBACK = `${ORIGIN}/v1/auth/callback`;
const CLIENT = { id: "dqs-dev", secret: "dqs-dev-secret" };
const VERIFIER = "a-code-verifier-of-at-least-forty-three-characters";

interface OAuthError {
  error: string;
  error_description: string;
}

function basic(id: string, secret: string): string {
  return `Basic ${btoa(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`)}`;
}

async function authorizeParams(overrides: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    response_type: "code",
    client_id: CLIENT.id,
    redirect_uri: CALLBACK,
    state: "the-state",
    nonce: "the-nonce",
    code_challenge: await sha256(VERIFIER),
    code_challenge_method: "S256",
    ...overrides,
  };
}

/** Signs in at the provider's form and returns the authorization code it redirects with. */
async function authorizationCode(username: string, overrides: Record<string, string> = {}): Promise<string> {
  const response = await call("/idp/authorize", {
    method: "POST",
    body: new URLSearchParams({ ...(await authorizeParams(overrides)), username }),
  });
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get("location") ?? "");
  return location.searchParams.get("code") ?? "";
}

function redeem(code: string, overrides: Record<string, string> = {}, authorization = basic(CLIENT.id, CLIENT.secret)) {
  return call("/idp/token", {
    method: "POST",
    headers: authorization ? { authorization } : {},
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: CALLBACK,
      code_verifier: VERIFIER,
      ...overrides,
    }),
  });
}

async function expectOAuthError(response: Response, status: number, error: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(await response.json<OAuthError>()).toMatchObject({ error });
}

async function providerKeys(): Promise<ReturnType<typeof createLocalJWKSet>> {
  return createLocalJWKSet(await (await call("/idp/jwks")).json<JSONWebKeySet>());
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("GET /idp/.well-known/openid-configuration", () => {
  it("should describe a provider for the authorization code flow with PKCE S256", async () => {
    const response = await call("/idp/.well-known/openid-configuration");

    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/authorize`,
      token_endpoint: `${ISSUER}/token`,
      jwks_uri: `${ISSUER}/jwks`,
      response_types_supported: ["code"],
      code_challenge_methods_supported: ["S256"],
      id_token_signing_alg_values_supported: ["ES256"],
    });
  });
});

describe("GET /idp/jwks", () => {
  it("should publish only public keys", async () => {
    const jwks = await (await call("/idp/jwks")).json<JSONWebKeySet>();

    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const key of jwks.keys) {
      expect(key).toMatchObject({ kty: "EC", crv: "P-256", kid: expect.any(String) });
      expect(key).not.toHaveProperty("d");
    }
  });
});

describe("GET /idp/authorize", () => {
  it("should show a sign-in form with a username field that carries the request on", async () => {
    const params = await authorizeParams();

    const response = await call(`/idp/authorize?${new URLSearchParams(params)}`);

    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toMatch(/<form method="post" action="authorize">/);
    expect(html).toMatch(/<input id="username" type="text" name="username"/);
    for (const [name, value] of Object.entries(params))
      expect(html).toContain(`<input type="hidden" name="${name}" value="${value}" />`);
  });

  it.each([
    ["an unknown client", { client_id: "someone-else" }, /unknown client_id/],
    [
      "an unregistered redirect_uri",
      { redirect_uri: "https://evil.example/callback" },
      /redirect_uri is not registered/,
    ],
    ["no PKCE challenge", { code_challenge: "" }, /PKCE with S256 is required/],
    ["the plain PKCE method", { code_challenge_method: "plain" }, /PKCE with S256 is required/],
    ["no state", { state: "" }, /state is required/],
    ["another response_type", { response_type: "token" }, /response_type must be code/],
  ])("should refuse a request with %s", async (_, overrides, problem) => {
    const response = await call(`/idp/authorize?${new URLSearchParams(await authorizeParams(overrides))}`);

    expect(response.status).toBe(400);
    const html = await response.text();
    expect(html).toMatch(problem);
    expect(html).not.toContain('name="username"');
  });
});

describe("POST /idp/authorize", () => {
  it("should send the browser back to the service with a code and the state", async () => {
    const response = await call("/idp/authorize", {
      method: "POST",
      body: new URLSearchParams({ ...(await authorizeParams()), username: "idp-alice" }),
    });

    expect(response.status).toBe(302);
    const location = new URL(response.headers.get("location") ?? "");
    expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
    expect(location.searchParams.get("state")).toBe("the-state");
    expect(location.searchParams.get("code")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("should show the form again for a username it cannot accept", async () => {
    const response = await call("/idp/authorize", {
      method: "POST",
      body: new URLSearchParams({ ...(await authorizeParams()), username: "no spaces <allowed>" }),
    });

    expect(response.status).toBe(400);
    const html = await response.text();
    expect(html).toContain('role="alert"');
    expect(html).toContain('name="username"');
  });

  it("should refuse a form that changed the registered redirect_uri", async () => {
    const response = await call("/idp/authorize", {
      method: "POST",
      body: new URLSearchParams({
        ...(await authorizeParams({ redirect_uri: "https://evil.example/cb" })),
        username: "x",
      }),
    });

    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
  });
});

describe("POST /idp/token", () => {
  it("should issue an ID token signed by its keys for the user who signed in", async () => {
    const response = await redeem(await authorizationCode("idp-bob"));

    expect(response.status).toBe(200);
    const body = await response.json<{ id_token: string; token_type: string }>();
    expect(body.token_type).toBe("Bearer");
    const { payload } = await jwtVerify(body.id_token, await providerKeys(), { issuer: ISSUER, audience: CLIENT.id });
    expect(payload).toMatchObject({ sub: "dev|idp-bob", preferred_username: "idp-bob", nonce: "the-nonce" });
    expect(payload.email).toBeUndefined();
  });

  it("should put a username that is an e-mail address into the email claim", async () => {
    const response = await redeem(await authorizationCode("idp-carol@example.com"));

    const { id_token } = await response.json<{ id_token: string }>();
    expect(decodeJwt(id_token)).toMatchObject({ email: "idp-carol@example.com" });
  });

  it("should accept the client credentials in the form body too", async () => {
    const code = await authorizationCode("idp-post");

    const response = await redeem(code, { client_id: CLIENT.id, client_secret: CLIENT.secret }, "");

    expect(response.status).toBe(200);
  });

  it("should refuse a wrong client secret", async () => {
    const code = await authorizationCode("idp-secret");

    await expectOAuthError(await redeem(code, {}, basic(CLIENT.id, "wrong-secret")), 401, "invalid_client");
    await expectOAuthError(
      await redeem(code, { client_id: CLIENT.id, client_secret: "wrong" }, ""),
      401,
      "invalid_client",
    );
  });

  it("should refuse an unknown client", async () => {
    const code = await authorizationCode("idp-client");

    await expectOAuthError(await redeem(code, {}, basic("someone-else", CLIENT.secret)), 401, "invalid_client");
  });

  it("should refuse client credentials it cannot decode", async () => {
    const code = await authorizationCode("idp-garbled");

    await expectOAuthError(await redeem(code, {}, "Basic %%%not-base64%%%"), 401, "invalid_client");
    await expectOAuthError(await redeem(code, {}, `Basic ${btoa("dqs-dev:%E0%A4%A")}`), 401, "invalid_client");
  });

  it("should refuse a wrong PKCE verifier", async () => {
    const code = await authorizationCode("idp-pkce");

    await expectOAuthError(await redeem(code, { code_verifier: `${VERIFIER}-not` }), 400, "invalid_grant");
  });

  it("should refuse a code that was already used", async () => {
    const code = await authorizationCode("idp-reuse");
    expect((await redeem(code)).status).toBe(200);

    await expectOAuthError(await redeem(code), 400, "invalid_grant");
  });

  it("should refuse a redirect_uri other than the one the code was issued for", async () => {
    const code = await authorizationCode("idp-redirect");

    await expectOAuthError(await redeem(code, { redirect_uri: `${CALLBACK}?x=1` }), 400, "invalid_grant");
  });

  it("should refuse an unknown code", async () => {
    await expectOAuthError(await redeem("not-a-code-it-issued"), 400, "invalid_grant");
  });

  it("should refuse a code older than two minutes", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const code = await authorizationCode("idp-late");
    vi.setSystemTime(Date.now() + 121_000);

    await expectOAuthError(await redeem(code), 400, "invalid_grant");
  });

  it("should refuse another grant type", async () => {
    const code = await authorizationCode("idp-grant");

    await expectOAuthError(await redeem(code, { grant_type: "client_credentials" }), 400, "unsupported_grant_type");
  });
});

describe("availability of the development provider", () => {
  const requests: [string, RequestInit][] = [
    ["/idp/.well-known/openid-configuration", {}],
    ["/idp/jwks", {}],
    ["/idp/authorize?response_type=code&client_id=dqs-dev", {}],
    ["/idp/authorize", { method: "POST", body: new URLSearchParams({ username: "mallory" }) }],
    ["/idp/token", { method: "POST", body: new URLSearchParams({ grant_type: "authorization_code" }) }],
    // A wrong method too: a 405 would tell that the provider is there.
    ["/idp/jwks", { method: "DELETE" }],
  ];

  async function expectUnreachable(via: Fetch): Promise<void> {
    for (const [path, init] of requests) {
      const body = await readEnvelope(await call(path, init, via), 404);
      expect(body.Status.Message).toMatch(/No such endpoint/);
    }
  }

  it("should answer 404 in a production deployment", async () => {
    await expectUnreachable(
      workerWith({ ENVIRONMENT: "production", OIDC_ISSUER: "https://idp.example.test", OIDC_CLIENT_SECRET: "secret" }),
    );
  });

  it("should answer 404 in development when an external provider is configured", async () => {
    await expectUnreachable(workerWith({ OIDC_ISSUER: "https://idp.example.test", OIDC_CLIENT_SECRET: "secret" }));
  });

  it("should not serve the sign-in form in a production deployment that forgot its provider", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const production = workerWith({ ENVIRONMENT: "production" });

    const response = await call(`/idp/authorize?${new URLSearchParams(await authorizeParams())}`, {}, production);

    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("username");
  });

  it("should stay unreachable when ENVIRONMENT is anything but exactly development", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    for (const environment of ["Development", "dev", ""]) {
      const response = await call("/idp/jwks", {}, workerWith({ ENVIRONMENT: environment }));
      expect(response.status).not.toBe(200);
    }
  });
});
