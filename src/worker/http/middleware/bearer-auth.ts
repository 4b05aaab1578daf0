import { createMiddleware } from "hono/factory";
import { authenticateConsole } from "../../auth/console-sessions";
import { authenticate, type AuthenticationResult } from "../../auth/tokens";
import type { Principal } from "../../catalog/accounts";
import { tokenContext, type AppContext, type AppEnv } from "../context";
import { unauthorized } from "../errors";
import { checkConsoleRequest, consoleCookie } from "./console-session";
import { enforceRateLimit } from "./rate-limit";

type Failure = Exclude<AuthenticationResult, { ok: true }>["reason"];

/** What each kind of rejected token is told; none of it reveals keys or session details. */
function failureMessage(reason: Failure, termsVersion: string): string {
  switch (reason) {
    case "malformed":
      return "The access token is not a well-formed JWT.";
    case "expired":
      return "The access token has expired; renew it with POST /v1/auth/token.";
    case "bad_signature":
      return "The access token's signature is not valid.";
    case "wrong_algorithm":
      return "The access token is not signed with the algorithm this service uses (ES256).";
    case "wrong_claims":
      return "The access token was not issued for this service (issuer, audience or token type do not match).";
    case "revoked":
      return "The session of this access token has ended; log in again at GET /v1/auth.";
    case "terms_not_accepted":
      return `You have not accepted the current terms of service (version ${termsVersion}); log in at GET /v1/auth to read and accept them.`;
  }
}

/** The caller of `Authorization: Bearer <access token>` (scheme case-insensitive); 401 when it is missing or bad. */
async function bearerPrincipal(c: AppContext, header: string | undefined): Promise<Principal> {
  if (!header)
    throw unauthorized(
      "Missing bearer token: send 'Authorization: Bearer <access token>'; get tokens by logging in at GET /v1/auth.",
      "invalid_request",
    );
  const match = header.match(/^\s*bearer\s+([^\s]+)\s*$/i);
  if (!match) throw unauthorized("The Authorization header must be 'Bearer <access token>'.", "invalid_request");
  const tokens = await tokenContext(c);
  const result = await authenticate(tokens, match[1]!);
  if (!result.ok) throw unauthorized(failureMessage(result.reason, tokens.termsVersion));
  return result.principal;
}

/** The caller of the web console's cookie session; 403 for a forged change, 401 when the session has ended. */
async function consolePrincipal(c: AppContext, cookie: string): Promise<Principal> {
  checkConsoleRequest(c);
  const config = c.get("config");
  const result = await authenticateConsole({ db: c.env.DB, termsVersion: config.termsVersion }, cookie);
  if (result.ok) return result.principal;
  throw unauthorized(
    result.reason === "terms_not_accepted"
      ? `You have not accepted the current terms of service (version ${config.termsVersion}); sign in again at /console/sign-in to read and accept them.`
      : "Your console session has ended (signed out, expired or revoked); sign in again at /console/sign-in.",
  );
}

/**
 * Puts the caller on the context: from `Authorization: Bearer <access
 * token>`, or, for a request without that header, from the web console's
 * cookie session. A request with the header is never judged by a cookie.
 */
export const requireAuth = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("authorization");
  const cookie = header === undefined ? consoleCookie(c) : undefined;
  const principal = cookie === undefined ? await bearerPrincipal(c, header) : await consolePrincipal(c, cookie);
  await enforceRateLimit(c.env.USER_RATE_LIMITER, principal.userId);
  c.set("principal", principal);
  await next();
});

/** Spread into a path that is only documented (its handler is a plain route with requireAuth): the bearer requirement. */
export const bearerSecurity = { security: [{ Bearer: [] as string[] }] };

/** Spread into a route definition: documents the bearer requirement and enforces it with the same declaration. */
export const authenticated = {
  ...bearerSecurity,
  middleware: [requireAuth] as [typeof requireAuth],
};
