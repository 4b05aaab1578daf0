import { errors, jwtVerify, SignJWT } from "jose";
import { randomToken } from "../util/crypto";
import { nowSeconds } from "../util/time";
import { SIGNING_ALG, type KeySet } from "./keys";

/** Audience of every access token (docs/api.md). */
export const AUDIENCE = "dqs";
/** Access token lifetime: one hour (interface §5). */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
const TOKEN_TYPE = "at+jwt";

export interface AccessClaims {
  userId: string;
  sessionId: string;
}

/** Signs an access token for a session. */
export async function issueAccessToken(
  keys: KeySet,
  issuer: string,
  claims: AccessClaims,
): Promise<{ token: string; expiresAt: number }> {
  const issuedAt = nowSeconds();
  const expiresAt = issuedAt + ACCESS_TOKEN_TTL_SECONDS;
  const token = await new SignJWT({ sid: claims.sessionId })
    .setProtectedHeader({ alg: SIGNING_ALG, kid: keys.signingKid, typ: TOKEN_TYPE })
    .setIssuer(issuer)
    .setAudience(AUDIENCE)
    .setSubject(claims.userId)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAt)
    .setJti(randomToken(16))
    .sign(keys.signingKey);
  return { token, expiresAt };
}

export type AccessTokenCheck =
  | { ok: true; claims: AccessClaims }
  | { ok: false; reason: "malformed" | "expired" | "bad_signature" | "wrong_algorithm" | "wrong_claims" };

/**
 * Verifies signature, algorithm, type, issuer, audience and expiry. The
 * algorithm is pinned, so `alg: none` and HS256 signed with the public key
 * fail before any key is used.
 */
export async function verifyAccessToken(keys: KeySet, issuer: string, token: string): Promise<AccessTokenCheck> {
  try {
    const { payload } = await jwtVerify(token, keys.verificationKeys, {
      algorithms: [SIGNING_ALG],
      issuer,
      audience: AUDIENCE,
      typ: TOKEN_TYPE,
      requiredClaims: ["sub", "exp", "iat", "jti", "sid"],
    });
    if (typeof payload.sid !== "string" || typeof payload.sub !== "string")
      return { ok: false, reason: "wrong_claims" };
    return { ok: true, claims: { userId: payload.sub, sessionId: payload.sid } };
  } catch (error) {
    return { ok: false, reason: classify(error) };
  }
}

function classify(error: unknown): Exclude<AccessTokenCheck, { ok: true }>["reason"] {
  if (error instanceof errors.JWTExpired) return "expired";
  if (error instanceof errors.JOSEAlgNotAllowed) return "wrong_algorithm";
  if (error instanceof errors.JWTClaimValidationFailed) return "wrong_claims";
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey)
    return "bad_signature";
  return "malformed";
}
