import { randomToken, sha256 } from "../util/crypto";
import { isoSeconds, nowSeconds } from "../util/time";
import { createSession, revokeSession } from "./sessions";
import { sessionPrincipal, type AuthenticationResult, type TokenContext } from "./tokens";

/** A console sign-in lasts a working week; then the person signs in again. */
export const CONSOLE_SESSION_TTL_SECONDS = 7 * 24 * 3600;

/**
 * Starts a session for a console sign-in and returns the cookie's value (256
 * random bits; only its hash is stored). The session has no refresh token:
 * the cookie is its only credential (OAuth 2.0 for Browser-Based
 * Applications, §6.1 backend-for-frontend).
 */
export async function startConsoleSession(
  db: D1Database,
  userId: string,
): Promise<{ token: string; expiresAt: number }> {
  const sessionId = await createSession(db, userId);
  const token = randomToken(32);
  const expiresAt = nowSeconds() + CONSOLE_SESSION_TTL_SECONDS;
  await db
    .prepare("INSERT INTO console_sessions (token_hash, session_id, expires_at) VALUES (?, ?, ?)")
    .bind(await sha256(token), sessionId, isoSeconds(expiresAt))
    .run();
  return { token, expiresAt };
}

/** Checks a console cookie's value: its session must be live, unexpired, and its owner must have accepted the terms. */
export async function authenticateConsole(
  ctx: Pick<TokenContext, "db" | "termsVersion">,
  token: string,
): Promise<AuthenticationResult> {
  const row = await ctx.db
    .prepare("SELECT session_id AS sessionId FROM console_sessions WHERE token_hash = ? AND expires_at > ?")
    .bind(await sha256(token), isoSeconds(nowSeconds()))
    .first<{ sessionId: string }>();
  if (!row) return { ok: false, reason: "revoked" };
  return sessionPrincipal(ctx, row.sessionId);
}

/** Signs out: the cookie stops working and its session is revoked. */
export async function endConsoleSession(db: D1Database, token: string): Promise<void> {
  const row = await db
    .prepare("DELETE FROM console_sessions WHERE token_hash = ? RETURNING session_id AS sessionId")
    .bind(await sha256(token))
    .first<{ sessionId: string }>();
  if (row) await revokeSession(db, row.sessionId, "signed out of the console");
}
