import { findUserById, type Principal } from "../catalog/accounts";
import { issueAccessToken, verifyAccessToken } from "./access-token";
import type { KeySet } from "./keys";
import { createSession, findSessionOwner, issueRefreshToken, revokeSession, spendRefreshToken } from "./sessions";

/** What a login or a refresh hands the caller; times in epoch seconds. */
export interface TokenSet {
  accessToken: string;
  accessTokenExpiresAt: number;
  refreshToken: string;
  refreshTokenExpiresAt: number;
}

/** Where tokens are issued and checked: the keys, the issuer and the current terms version. */
export interface TokenContext {
  db: D1Database;
  keys: KeySet;
  issuer: string;
  termsVersion: string;
}

/** Starts a session for a user who has just logged in and accepted the terms, and issues its first tokens. */
export async function startSession(ctx: TokenContext, userId: string): Promise<TokenSet> {
  const sessionId = await createSession(ctx.db, userId);
  return issueTokens(ctx, userId, sessionId);
}

async function issueTokens(ctx: TokenContext, userId: string, sessionId: string): Promise<TokenSet> {
  const access = await issueAccessToken(ctx.keys, ctx.issuer, { userId, sessionId });
  const refresh = await issueRefreshToken(ctx.db, sessionId);
  return {
    accessToken: access.token,
    accessTokenExpiresAt: access.expiresAt,
    refreshToken: refresh.token,
    refreshTokenExpiresAt: refresh.expiresAt,
  };
}

export type RefreshResult =
  | { ok: true; tokens: TokenSet }
  | { ok: false; reason: "unknown" | "expired" | "revoked" | "reused" | "terms_not_accepted" };

/** Rotates a refresh token into a new token set (interface §5 items 4-5). */
export async function refreshTokens(ctx: TokenContext, refreshToken: string): Promise<RefreshResult> {
  const spent = await spendRefreshToken(ctx.db, refreshToken);
  if (!spent.ok) return spent;
  const user = await findUserById(ctx.db, spent.userId);
  if (!user || user.termsVersion !== ctx.termsVersion) {
    // The token is spent already; revoke so that no half-used session lingers.
    await revokeSession(ctx.db, spent.sessionId, "terms of service not accepted");
    return { ok: false, reason: "terms_not_accepted" };
  }
  return { ok: true, tokens: await issueTokens(ctx, spent.userId, spent.sessionId) };
}

export type AuthenticationResult =
  | { ok: true; principal: Principal }
  | {
      ok: false;
      reason:
        | "malformed"
        | "expired"
        | "bad_signature"
        | "wrong_algorithm"
        | "wrong_claims"
        | "revoked"
        | "terms_not_accepted";
    };

/** Checks an access token and the session behind it. */
export async function authenticate(ctx: TokenContext, accessToken: string): Promise<AuthenticationResult> {
  const verified = await verifyAccessToken(ctx.keys, ctx.issuer, accessToken);
  if (!verified.ok) return verified;
  return sessionPrincipal(ctx, verified.claims.sessionId, verified.claims.userId);
}

/**
 * The caller behind a session that is live and whose owner has accepted the
 * current terms; `userId`, from a token, must be the session's user.
 */
export async function sessionPrincipal(
  ctx: Pick<TokenContext, "db" | "termsVersion">,
  sessionId: string,
  userId?: string,
): Promise<AuthenticationResult> {
  const owner = await findSessionOwner(ctx.db, sessionId);
  if (!owner || owner.revoked || (userId !== undefined && owner.userId !== userId))
    return { ok: false, reason: "revoked" };
  if (owner.termsVersion !== ctx.termsVersion) return { ok: false, reason: "terms_not_accepted" };
  return {
    ok: true,
    principal: {
      userId: owner.userId,
      accountId: owner.accountId,
      accountName: owner.accountName,
      sessionId,
      termsVersion: ctx.termsVersion,
    },
  };
}

/** Ends the session a principal belongs to (logout). */
export async function endSession(ctx: TokenContext, principal: Principal): Promise<void> {
  await revokeSession(ctx.db, principal.sessionId, "logged out");
}
