import { createMiddleware } from "hono/factory";
import { authenticate, type AuthenticationResult } from "../../auth/tokens";
import { tokenContext, type AppEnv } from "../context";
import { unauthorized } from "../errors";
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

/** Requires `Authorization: Bearer <access token>` (scheme case-insensitive) and puts the caller on the context. */
export const requireAuth = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("authorization");
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
  await enforceRateLimit(c.env.USER_RATE_LIMITER, result.principal.userId);
  c.set("principal", result.principal);
  await next();
});

/** Spread into a path that is only documented (its handler is a plain route with requireAuth): the bearer requirement. */
export const bearerSecurity = { security: [{ Bearer: [] as string[] }] };

/** Spread into a route definition: documents the bearer requirement and enforces it with the same declaration. */
export const authenticated = {
  ...bearerSecurity,
  middleware: [requireAuth] as [typeof requireAuth],
};
