import { randomToken, sha256 } from "../util/crypto";
import { isoSeconds, nowSeconds } from "../util/time";

/** Refresh token lifetime: 45 days from issue (interface §5). */
export const REFRESH_TOKEN_TTL_SECONDS = 45 * 24 * 3600;

/** Starts a session (one login) for a user. */
export async function createSession(db: D1Database, userId: string): Promise<string> {
  const sessionId = randomToken(16);
  await db
    .prepare("INSERT INTO sessions (id, user_id, created_at) VALUES (?, ?, ?)")
    .bind(sessionId, userId, isoSeconds(nowSeconds()))
    .run();
  return sessionId;
}

/** Issues a new refresh token (256 random bits) in a session; only its hash is stored. */
export async function issueRefreshToken(
  db: D1Database,
  sessionId: string,
): Promise<{ token: string; expiresAt: number }> {
  const token = randomToken(32);
  const issuedAt = nowSeconds();
  const expiresAt = issuedAt + REFRESH_TOKEN_TTL_SECONDS;
  await db
    .prepare("INSERT INTO refresh_tokens (token_hash, session_id, issued_at, expires_at) VALUES (?, ?, ?, ?)")
    .bind(await sha256(token), sessionId, isoSeconds(issuedAt), isoSeconds(expiresAt))
    .run();
  return { token, expiresAt };
}

export type RotationResult =
  { ok: true; sessionId: string; userId: string } | { ok: false; reason: "unknown" | "expired" | "revoked" | "reused" };

/**
 * Spends a refresh token. A token may be spent once: presenting one that was
 * already rotated away means it leaked or was replayed, so the whole session
 * is revoked (OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
 */
export async function spendRefreshToken(db: D1Database, token: string): Promise<RotationResult> {
  const hash = await sha256(token);
  const now = isoSeconds(nowSeconds());
  const row = await db
    .prepare(
      `SELECT r.session_id AS sessionId, r.expires_at AS expiresAt, r.rotated_at AS rotatedAt,
              s.revoked_at AS revokedAt, s.user_id AS userId
       FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id WHERE r.token_hash = ?`,
    )
    .bind(hash)
    .first<{
      sessionId: string;
      expiresAt: string;
      rotatedAt: string | null;
      revokedAt: string | null;
      userId: string;
    }>();
  if (!row) return { ok: false, reason: "unknown" };
  if (row.revokedAt) return { ok: false, reason: "revoked" };
  if (row.rotatedAt) {
    await revokeSession(db, row.sessionId, "refresh token reused");
    return { ok: false, reason: "reused" };
  }
  if (row.expiresAt <= now) return { ok: false, reason: "expired" };
  // The conditional update makes two concurrent uses of one token a reuse, not two successes.
  const spent = await db
    .prepare("UPDATE refresh_tokens SET rotated_at = ? WHERE token_hash = ? AND rotated_at IS NULL")
    .bind(now, hash)
    .run();
  if (spent.meta.changes !== 1) {
    await revokeSession(db, row.sessionId, "refresh token reused");
    return { ok: false, reason: "reused" };
  }
  return { ok: true, sessionId: row.sessionId, userId: row.userId };
}

/** Ends a session: its refresh tokens and access tokens stop working. */
export async function revokeSession(db: D1Database, sessionId: string, reason: string): Promise<void> {
  await db
    .prepare("UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL")
    .bind(isoSeconds(nowSeconds()), reason, sessionId)
    .run();
}

export interface SessionOwner {
  userId: string;
  accountId: string;
  accountName: string;
  termsVersion: string | null;
  revoked: boolean;
}

/** The session's user and account, for the bearer check. */
export async function findSessionOwner(db: D1Database, sessionId: string): Promise<SessionOwner | null> {
  const row = await db
    .prepare(
      `SELECT u.id AS userId, a.id AS accountId, a.name AS accountName, u.terms_version AS termsVersion,
              s.revoked_at AS revokedAt
       FROM sessions s JOIN users u ON u.id = s.user_id JOIN accounts a ON a.id = u.account_id
       WHERE s.id = ?`,
    )
    .bind(sessionId)
    .first<Omit<SessionOwner, "revoked"> & { revokedAt: string | null }>();
  if (!row) return null;
  const { revokedAt, ...owner } = row;
  return { ...owner, revoked: revokedAt !== null };
}
