import { accepts } from "hono/accepts";
import { z } from "@hono/zod-openapi";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import {
  acceptTermsAndFinish,
  beginLogin,
  completeLogin,
  exchangeLoginCode,
  isLoopbackRedirectUri,
  isS256Challenge,
  loopbackLocation,
  type LoginClient,
  type LoginContext,
  type LoginFinish,
  type LoopbackClient,
} from "../../auth/login";
import { ProviderError } from "../../auth/oidc-client";
import { endSession, refreshTokens, type RefreshResult, type TokenSet } from "../../auth/tokens";
import { identityProvider } from "../../config";
import { timingSafeEqual } from "../../util/crypto";
import { isoSeconds } from "../../util/time";
import { tokenContext, type AppContext, type AppEnv } from "../context";
import { ApiError, badRequest, unauthorized } from "../errors";
import { authenticated } from "../middleware/bearer-auth";
import { setConsoleCookie } from "../middleware/console-session";
import { authRateLimit } from "../middleware/rate-limit";
import { tokensPageSecurityHeaders } from "../middleware/security-headers";
import { createRouter } from "../router";
import { loginEndedPage, termsAddressPage, termsPage, tokensPage } from "../pages/auth-pages";
import { providerFetch } from "../provider-fetch";
import { apiRoute, locationHeader, optionalHeader } from "../api-route";
import {
  envelope,
  errorResponses,
  GeneralApiResponse,
  jsonResponse,
  JwtResponse,
  RefreshTokenRequest,
  withData,
} from "../schemas";

/** Binds a login to the browser that started it, so a stolen callback URL is useless elsewhere. */
const LOGIN_COOKIE = "dqs_login";
/** Where a console sign-in lands (static assets, src/web). */
export const CONSOLE_HOME = "/console/";

export const authRoutes = createRouter();

// Both may end a login with the tokens page, whose Copy buttons are a script.
for (const path of ["/auth/callback", "/auth/terms"]) authRoutes.use(path, tokensPageSecurityHeaders);

async function loginContext(c: AppContext): Promise<LoginContext> {
  const config = c.get("config");
  return {
    tokens: await tokenContext(c),
    provider: identityProvider(config),
    providerFetch: providerFetch(c),
    redirectUri: `${config.publicUrl}/v1/auth/callback`,
  };
}

function jwtResponseData(tokens: TokenSet) {
  return {
    TokenType: "Bearer" as const,
    AccessToken: tokens.accessToken,
    AccessTokenExpiresOn: isoSeconds(tokens.accessTokenExpiresAt),
    RefreshToken: tokens.refreshToken,
    RefreshTokenExpiresOn: isoSeconds(tokens.refreshTokenExpiresAt),
  };
}

/** JSON when the client prefers it by RFC 9110's rules (q-values, then specificity); a page for everyone else. */
function wantsJson(c: AppContext): boolean {
  return (
    accepts(c, { header: "Accept", supports: ["text/html", "application/json"], default: "text/html" }) ===
    "application/json"
  );
}

/** Shows freshly issued tokens: JSON for programs, a page for people. Never cached. */
function showTokens(c: AppContext, tokens: TokenSet, accountName: string) {
  c.header("Cache-Control", "no-store");
  deleteCookie(c, LOGIN_COOKIE, { path: "/v1/auth" });
  const data = jwtResponseData(tokens);
  if (wantsJson(c)) return c.json({ ...envelope(200, "Logged in"), Data: data }, 200);
  return c.html(tokensPage({ publicUrl: c.get("config").publicUrl, accountName, ...data }));
}

/**
 * Ends a login: tokens for a browser login, a redirect with the one-time code
 * for a loopback client, the session cookie and a redirect into the console.
 */
function finishLogin(c: AppContext, outcome: LoginFinish) {
  if (outcome.kind === "tokens") return showTokens(c, outcome.tokens, outcome.accountName);
  c.header("Cache-Control", "no-store");
  deleteCookie(c, LOGIN_COOKIE, { path: "/v1/auth" });
  if (outcome.kind === "loopback") return c.redirect(outcome.location, 302);
  setConsoleCookie(c, outcome.cookie, outcome.expiresAt);
  // 303: the terms page's POST becomes a GET of the console.
  return c.redirect(CONSOLE_HOME, 303);
}

/** The loopback client a GET /v1/auth names, checked before anything is stored (RFC 8252 §7.3, RFC 7636). */
function loopbackClient(query: {
  redirect_uri?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  state?: string;
}): LoopbackClient | null {
  if (query.redirect_uri === undefined && query.code_challenge === undefined) return null;
  // Never redirect to an address that failed these checks (RFC 6749 §4.1.2.1): the errors are shown here.
  if (!query.redirect_uri || !isLoopbackRedirectUri(query.redirect_uri))
    throw badRequest(
      "redirect_uri must be a loopback address with a port: http://127.0.0.1:PORT/…, http://[::1]:PORT/… or http://localhost:PORT/….",
    );
  if (query.code_challenge_method !== "S256" || !query.code_challenge || !isS256Challenge(query.code_challenge))
    throw badRequest(
      "A loopback login needs PKCE: code_challenge (S256, 43 characters) and code_challenge_method=S256.",
    );
  return { redirectUri: query.redirect_uri, codeChallenge: query.code_challenge, state: query.state ?? null };
}

const PROVIDER_FAILURE = {
  provider_unreachable:
    "The identity provider could not be reached (no answer, a timeout or a server error); try again later.",
  provider_error: "The identity provider's answer could not be verified; try again later.",
};

/** Logs why a login failed, with the request's ids; the detail never reaches the client. */
function logLoginFailure(c: AppContext, reason: string, detail: string): void {
  console.warn(
    JSON.stringify({
      requestId: c.get("requestId"),
      clientRequestId: c.get("clientRequestId"),
      login: reason,
      detail,
    }),
  );
}

/** Starts a login; a provider that cannot be reached or answers wrongly is a 502, not a 500. */
async function beginProviderLogin(c: AppContext, client: LoginClient) {
  try {
    return await beginLogin(await loginContext(c), client);
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    const reason = error.reason === "unreachable" ? "provider_unreachable" : "provider_error";
    logLoginFailure(c, reason, error.message);
    throw new ApiError(502, PROVIDER_FAILURE[reason]);
  }
}

/**
 * Sends the browser to the identity provider, the login bound to it by an
 * HttpOnly cookie holding the state: GET /v1/auth, and the console's sign-in.
 */
export async function redirectToProvider(c: AppContext, client: LoginClient) {
  const { url, state } = await beginProviderLogin(c, client);
  setCookie(c, LOGIN_COOKIE, state, {
    path: "/v1/auth",
    httpOnly: true,
    // Lax: the provider's redirect back is a top-level cross-site navigation.
    sameSite: "Lax",
    secure: c.get("config").publicUrl.startsWith("https:"),
    maxAge: 600,
  });
  c.header("Cache-Control", "no-store");
  return c.redirect(url, 302);
}

/** Whether the login cookie of this browser matches the login's state. */
function hasLoginCookie(c: AppContext, state: string): boolean {
  const cookie = getCookie(c, LOGIN_COOKIE) ?? "";
  return state !== "" && timingSafeEqual(cookie, state);
}

/**
 * Answers a login that has ended (its tokens shown), expired, or belongs to
 * another browser — what a reload or Back on the tokens page meets: a page
 * that says what happened and how to get new tokens, or, for a client that
 * asks for JSON, the envelope with `message`.
 */
function loginEnded(c: AppContext, message: string) {
  if (wantsJson(c)) throw badRequest(message);
  c.header("Cache-Control", "no-store");
  return c.html(loginEndedPage(), 400);
}

/** The login cookie set by GET /v1/auth and forgotten when the login ends; the console's session cookie. */
const LOGIN_COOKIES = {
  "Set-Cookie": optionalHeader(
    "dqs_login (HttpOnly, SameSite=Lax, path /v1/auth): set by GET /v1/auth to bind the login to this browser, expired when the login ends; a console sign-in also sets the console's session cookie",
  ),
};

/** What ends a login, for GET /v1/auth/callback and POST /v1/auth/terms. */
const LOGIN_ENDINGS = {
  200: {
    description:
      "The tokens: the JwtResponse for Accept: application/json, else a page showing them (GET /v1/auth/callback may answer the terms of service page instead)",
    headers: LOGIN_COOKIES,
    content: { "application/json": { schema: JwtResponse }, "text/html": { schema: z.string() } },
  },
  302: {
    description:
      "A loopback login (a native client's redirect_uri): redirect there with code and state, or with error (access_denied, temporarily_unavailable, server_error) when the login failed",
    headers: {
      Location: locationHeader("The native client's redirect_uri with code and state, or error and state"),
      ...LOGIN_COOKIES,
    },
  },
  303: {
    description: "A console sign-in: the console's session cookie is set and the browser goes to the console",
    headers: { Location: locationHeader("/console/"), ...LOGIN_COOKIES },
  },
  400: {
    description:
      "The login is unknown, used, expired or from another browser: the envelope for Accept: application/json, else a page that says so and how to start again",
    content: { "application/json": { schema: GeneralApiResponse }, "text/html": { schema: z.string() } },
  },
};

const NOT_THIS_BROWSER =
  "This login was not started in this browser, has finished or has expired; start again at GET /v1/auth.";
const LOGIN_ENDED = "This login is unknown, already used or expired; start again at GET /v1/auth.";

authRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/auth",
    tags: ["auth"],
    summary: "Log in: redirects to the identity provider",
    description:
      "Starts an OpenID Connect authorization code login (PKCE S256, state, nonce). After the provider, the browser lands on /v1/auth/callback, which shows the tokens. A native client (the dqs command line) may instead name a loopback redirect_uri with a PKCE code_challenge (RFC 8252): the finished login then redirects there with a one-time code (and its state), which the client exchanges at POST /v1/auth/code.",
    request: {
      query: z.object({
        redirect_uri: z.string().optional().openapi({
          description: "Loopback address of a native client: http://127.0.0.1:PORT/path (or [::1], localhost)",
        }),
        code_challenge: z.string().optional().openapi({
          description: "PKCE S256 challenge of the native client's verifier (required with redirect_uri)",
        }),
        code_challenge_method: z.string().optional().openapi({ description: "S256 (the only method)" }),
        state: z
          .string()
          .max(200)
          .optional()
          .openapi({ description: "Opaque value returned to the native client with the code" }),
      }),
    },
    responses: {
      302: {
        description: "Redirect to the authentication server",
        headers: {
          Location: locationHeader(
            "The identity provider's authorization endpoint, with the login's state, nonce and PKCE challenge",
          ),
          ...LOGIN_COOKIES,
        },
      },
      ...errorResponses(
        [400, "An invalid loopback redirect_uri or PKCE challenge"],
        [502, "The identity provider could not be reached or answered wrongly"],
      ),
    },
    clientLimit: true,
  }),
  async (c) => {
    const loopback = loopbackClient(c.req.valid("query"));
    return redirectToProvider(c, loopback ? { kind: "loopback", loopback } : { kind: "page" });
  },
);

authRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/auth/callback",
    tags: ["auth"],
    summary: "Where the identity provider sends the browser back",
    description:
      "Verifies state, nonce and the ID token, creates the personal account on first login, asks for the current terms of service if needed, and shows the tokens (HTML, or the JwtResponse for Accept: application/json).",
    request: {
      query: z.object({
        state: z.string().optional(),
        code: z.string().optional(),
        error: z.string().optional(),
        error_description: z.string().optional(),
      }),
    },
    responses: {
      ...LOGIN_ENDINGS,
      ...errorResponses(
        [401, "The provider refused the login, or the terms of service must be accepted in a browser"],
        [502, "The identity provider could not be reached or answered wrongly"],
      ),
    },
    clientLimit: true,
  }),
  async (c) => {
    const query = c.req.valid("query");
    const state = query.state ?? "";
    if (!hasLoginCookie(c, state)) return loginEnded(c, NOT_THIS_BROWSER);
    const ctx = await loginContext(c);
    const outcome = await completeLogin(ctx, { state, code: query.code, error: query.error });
    switch (outcome.kind) {
      case "tokens":
      case "loopback":
      case "console":
        return finishLogin(c, outcome);
      case "terms": {
        const config = c.get("config");
        if (wantsJson(c))
          throw unauthorized(
            `You have not accepted the current terms of service (version ${config.termsVersion}); finish this login in a browser to read and accept them.`,
          );
        c.header("Cache-Control", "no-store");
        return c.html(
          termsPage({ accountName: outcome.accountName, version: config.termsVersion, url: config.termsUrl, state }),
        );
      }
      case "rejected":
        logLoginFailure(c, outcome.reason, outcome.detail);
        if (outcome.client) {
          // The waiting command line learns that the login failed instead of waiting until it gives up.
          c.header("Cache-Control", "no-store");
          deleteCookie(c, LOGIN_COOKIE, { path: "/v1/auth" });
          // RFC 6749 §4.1.2.1's error codes.
          const error =
            outcome.reason === "provider_denied"
              ? "access_denied"
              : outcome.reason === "provider_unreachable"
                ? "temporarily_unavailable"
                : "server_error";
          return c.redirect(loopbackLocation(outcome.client, { error }), 302);
        }
        if (outcome.reason === "unknown_state") return loginEnded(c, LOGIN_ENDED);
        if (outcome.reason === "provider_denied")
          throw unauthorized(`The identity provider did not log you in (${query.error ?? "no code"}).`);
        throw new ApiError(502, PROVIDER_FAILURE[outcome.reason]);
    }
  },
);

authRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/auth/terms",
    tags: ["auth"],
    summary: "Accept the current terms of service during login",
    request: {
      body: {
        required: true,
        content: {
          "application/x-www-form-urlencoded": { schema: z.object({ state: z.string(), accept: z.literal("yes") }) },
        },
      },
    },
    responses: {
      ...LOGIN_ENDINGS,
      ...errorResponses([415, "The body is not application/x-www-form-urlencoded"]),
    },
    clientLimit: true,
  }),
  async (c) => {
    const { state } = c.req.valid("form");
    if (!hasLoginCookie(c, state)) return loginEnded(c, NOT_THIS_BROWSER);
    const outcome = await acceptTermsAndFinish(await loginContext(c), state);
    if (outcome.kind === "rejected") return loginEnded(c, LOGIN_ENDED);
    return finishLogin(c, outcome);
  },
);

// A page for the person whose browser asks for the terms form's address with GET (a reload, a bookmark).
authRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/auth/terms",
    tags: ["auth"],
    summary: "The terms form's address, opened rather than posted",
    description:
      "What a reload of, or a return to, the terms form's answer meets: a page for a browser, saying this sign-in step has ended and linking to the console and to GET /v1/auth; 405 with Allow: POST for a client that asks for JSON.",
    responses: {
      200: {
        description: "A page: this sign-in step has ended; open the console or sign in again",
        content: { "text/html": { schema: z.string() } },
      },
      ...errorResponses([405, "For Accept: application/json: the address takes POST (the terms form) only"]),
    },
    clientLimit: true,
    storage: false,
  }),
  (c) => {
    c.header("Cache-Control", "no-store");
    if (wantsJson(c))
      return c.json(
        envelope(405, "Method GET is not allowed on /v1/auth/terms; use POST (the terms page's form)."),
        405,
        { Allow: "POST" },
      );
    return c.html(termsAddressPage(), 200);
  },
);

const LoginCodeRequest = z
  .object({
    Code: z.string().min(1).max(200).openapi({ description: "The one-time code sent to the loopback redirect_uri" }),
    CodeVerifier: z.string().min(43).max(128).openapi({ description: "The PKCE verifier behind code_challenge" }),
    RedirectUri: z.string().min(1).max(512).openapi({ description: "The redirect_uri given to GET /v1/auth, exactly" }),
  })
  .openapi("LoginCodeRequest");

const LoginCodeResponse = withData(
  "LoginCodeResponse",
  JwtResponse.shape.Data.extend({ AccountName: z.string().openapi({ description: "The account logged in" }) }),
);

authRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/auth/code",
    tags: ["auth", "experimental"],
    summary: "Exchange a loopback login's one-time code for tokens",
    description:
      "For native clients (RFC 8252): the code from the loopback redirect, the PKCE verifier and the same redirect_uri yield the tokens of a new session. A code works once, within two minutes.",
    middleware: [authRateLimit] as const,
    request: { body: { required: true, content: { "application/json": { schema: LoginCodeRequest } } } },
    responses: {
      200: jsonResponse(LoginCodeResponse, "The tokens, and the account they act for"),
      ...errorResponses(
        [400, "The body is not JSON or lacks a field"],
        [401, "The code is unknown, spent or expired, or the verifier or redirect_uri does not match"],
        [415, "The body is not application/json"],
      ),
    },
    clientLimit: true,
  }),
  async (c) => {
    const body = c.req.valid("json");
    const result = await exchangeLoginCode(await tokenContext(c), {
      code: body.Code,
      codeVerifier: body.CodeVerifier,
      redirectUri: body.RedirectUri,
    });
    if (!result.ok)
      throw unauthorized(
        result.reason === "terms_not_accepted"
          ? "You have not accepted the current terms of service; log in again at GET /v1/auth."
          : "This login code is not valid (unknown, used, expired, or the verifier or redirect_uri does not match); log in again.",
      );
    c.header("Cache-Control", "no-store");
    return c.json(
      {
        ...envelope(200, `Logged in as ${result.accountName}`),
        Data: { ...jwtResponseData(result.tokens), AccountName: result.accountName },
      },
      200,
    );
  },
);

const refreshFailure: Record<Exclude<RefreshResult, { ok: true }>["reason"], string> = {
  unknown: "The refresh token is not valid; log in again at GET /v1/auth.",
  expired: "The refresh token has expired; log in again at GET /v1/auth.",
  revoked: "The session of this refresh token has ended; log in again at GET /v1/auth.",
  reused:
    "This refresh token was already used, so its session has been revoked to protect you; log in again at GET /v1/auth.",
  terms_not_accepted:
    "You have not accepted the current terms of service; log in at GET /v1/auth to read and accept them.",
};

authRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/auth/token",
    tags: ["auth"],
    summary: "Renew tokens with a refresh token",
    description:
      "Spends the refresh token and returns a new access token and a new refresh token. A refresh token works once; presenting a spent one revokes its whole session.",
    request: { body: { required: true, content: { "application/json": { schema: RefreshTokenRequest } } } },
    responses: {
      200: jsonResponse(JwtResponse, "New tokens"),
      ...errorResponses(
        [400, "The body is not JSON or has no RefreshToken"],
        [401, "The refresh token is invalidated, or the current terms of service are not accepted"],
        [415, "The body is not application/json"],
      ),
    },
    clientLimit: true,
  }),
  async (c) => {
    const { RefreshToken } = c.req.valid("json");
    const result = await refreshTokens(await tokenContext(c), RefreshToken);
    if (!result.ok) throw unauthorized(refreshFailure[result.reason]);
    c.header("Cache-Control", "no-store");
    return c.json({ ...envelope(200, "Tokens renewed"), Data: jwtResponseData(result.tokens) }, 200);
  },
);

authRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/auth/logout",
    tags: ["auth", "experimental"],
    summary: "Revoke the caller's session",
    description: "Ends the session of the access token: its refresh tokens and access tokens stop working.",
    ...authenticated,
    responses: {
      200: jsonResponse(GeneralApiResponse, "The session is revoked"),
    },
  }),
  async (c) => {
    await endSession(await tokenContext(c), c.get("principal"));
    return c.json(envelope(200, "Logged out; the session's tokens no longer work"), 200);
  },
);
