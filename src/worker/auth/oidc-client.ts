import { createRemoteJWKSet, customFetch, jwtVerify } from "jose";

/** How the service reaches its identity provider; the built-in development provider is reached in-process. */
export type ProviderFetch = (url: string, init?: RequestInit) => Promise<Response>;

export interface ProviderClient {
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string;
}

/** The parts of an OpenID Provider's discovery document the login flow uses (OIDC Discovery 1.0 §3). */
export interface ProviderMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  id_token_signing_alg_values_supported?: string[];
}

/** The identity an ID token vouches for. */
export interface VerifiedIdentity {
  issuer: string;
  subject: string;
  preferredUsername?: string;
  email?: string;
}

/**
 * The provider could not be reached (no answer, a timeout or a 5xx), or it
 * answered wrongly, or its token failed a check. Detail goes to logs only.
 */
export class ProviderError extends Error {
  override name = "ProviderError";
  constructor(
    message: string,
    readonly reason: "unreachable" | "bad_answer" = "bad_answer",
  ) {
    super(message);
  }
}

/** How long one request to the provider may take; a Worker's own fetch would wait as long as the request lives. */
const PROVIDER_TIMEOUT_MS = 10_000;

/** Sends one request to the provider: a network failure, a timeout or a 5xx is a ProviderError "unreachable". */
async function reach(providerFetch: ProviderFetch, url: string, init: RequestInit = {}): Promise<Response> {
  let response: Response;
  try {
    response = await providerFetch(url, { ...init, signal: init.signal ?? AbortSignal.timeout(PROVIDER_TIMEOUT_MS) });
  } catch (error) {
    throw new ProviderError(`${new URL(url).origin} did not answer: ${String(error)}`, "unreachable");
  }
  if (response.status >= 500) {
    await response.body?.cancel();
    throw new ProviderError(`${url} answered ${response.status}`, "unreachable");
  }
  return response;
}

/** The JSON object of a provider's answer, or a ProviderError "bad_answer" naming `what` it should have been. */
async function readJson(response: Response, what: string): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    const body: unknown = JSON.parse(text);
    if (body !== null && typeof body === "object" && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // Reported below with the text's start.
  }
  throw new ProviderError(`${what} is not a JSON object: ${text.slice(0, 200)}`);
}

const DISCOVERY_TTL_MS = 5 * 60 * 1000;
const discoveryCache = new Map<string, { metadata: ProviderMetadata; fetchedAt: number }>();

/** Reads and checks the provider's discovery document, cached for a few minutes per isolate. */
export async function discover(issuer: string, providerFetch: ProviderFetch): Promise<ProviderMetadata> {
  const cached = discoveryCache.get(issuer);
  if (cached && Date.now() - cached.fetchedAt < DISCOVERY_TTL_MS) return cached.metadata;
  const response = await reach(providerFetch, `${issuer}/.well-known/openid-configuration`, {
    headers: { accept: "application/json" },
  });
  if (!response.ok) throw new ProviderError(`discovery answered ${response.status}`);
  const metadata = (await readJson(response, "the discovery document")) as Partial<ProviderMetadata>;
  // OIDC Discovery §4.3: the issuer in the document must be exactly the one configured.
  if (metadata.issuer !== issuer) throw new ProviderError(`discovery issuer ${metadata.issuer} is not ${issuer}`);
  for (const field of ["authorization_endpoint", "token_endpoint", "jwks_uri"] as const)
    if (typeof metadata[field] !== "string") throw new ProviderError(`discovery document has no ${field}`);
  discoveryCache.set(issuer, { metadata: metadata as ProviderMetadata, fetchedAt: Date.now() });
  return metadata as ProviderMetadata;
}

/** The authorization request URL (RFC 6749 §4.1.1 with PKCE S256, RFC 7636, and an OIDC nonce). */
export function authorizationUrl(
  metadata: ProviderMetadata,
  client: ProviderClient,
  request: { redirectUri: string; state: string; nonce: string; codeChallenge: string },
): string {
  const url = new URL(metadata.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", client.clientId);
  url.searchParams.set("redirect_uri", request.redirectUri);
  url.searchParams.set("scope", client.scopes);
  url.searchParams.set("state", request.state);
  url.searchParams.set("nonce", request.nonce);
  url.searchParams.set("code_challenge", request.codeChallenge);
  url.searchParams.set("code_challenge_method", "S256");
  return url.toString();
}

/** Exchanges an authorization code for an ID token at the token endpoint (client_secret_basic). */
export async function exchangeCode(
  metadata: ProviderMetadata,
  client: ProviderClient,
  request: { code: string; redirectUri: string; codeVerifier: string },
  providerFetch: ProviderFetch,
): Promise<string> {
  const response = await reach(providerFetch, metadata.token_endpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
      // RFC 6749 §2.3.1: id and secret are form-encoded before they are joined.
      authorization: `Basic ${btoa(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`)}`,
    },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: request.code,
      redirect_uri: request.redirectUri,
      code_verifier: request.codeVerifier,
    }),
  });
  if (!response.ok) throw new ProviderError(`token endpoint answered ${response.status}: ${await response.text()}`);
  const body = await readJson(response, "the token response");
  if (typeof body.id_token !== "string") throw new ProviderError("token response has no id_token");
  return body.id_token;
}

/** Verifies an ID token: signature by the provider's JWKS, issuer, audience, expiry and nonce (OIDC Core §3.1.3.7). */
export async function verifyIdToken(
  metadata: ProviderMetadata,
  client: ProviderClient,
  idToken: string,
  expectedNonce: string,
  providerFetch: ProviderFetch,
): Promise<VerifiedIdentity> {
  // Fetched per login (logins are rare), so the keys always come through this request's own fetch.
  const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri), {
    // jose passes its own timeout signal (5 s); a JWKS that cannot be fetched is the provider's failure, not the token's.
    [customFetch]: (url: string, init: RequestInit) => reach(providerFetch, url, init),
  });
  let payload;
  try {
    ({ payload } = await jwtVerify(idToken, jwks, {
      issuer: metadata.issuer,
      audience: client.clientId,
      algorithms: metadata.id_token_signing_alg_values_supported?.filter((alg) => alg !== "none") ?? ["RS256"],
      requiredClaims: ["sub", "exp", "iat"],
      clockTolerance: 60,
    }));
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    throw new ProviderError(`ID token rejected: ${(error as Error).message}`);
  }
  if (payload.nonce !== expectedNonce) throw new ProviderError("ID token nonce does not match the login request");
  if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== client.clientId)
    throw new ProviderError("ID token azp is not this client");
  return {
    issuer: metadata.issuer,
    subject: payload.sub!,
    preferredUsername: typeof payload.preferred_username === "string" ? payload.preferred_username : undefined,
    email: typeof payload.email === "string" ? payload.email : undefined,
  };
}
