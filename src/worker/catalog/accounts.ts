import { randomToken } from "../util/crypto";
import { isAccountName, sanitizeAccountName } from "./names";

/** The caller as every protected route sees it. */
export interface Principal {
  userId: string;
  accountId: string;
  accountName: string;
  sessionId: string;
  /** The terms of service version the user accepted (the current one: authentication refuses any other). */
  termsVersion: string;
}

export interface IdentityClaims {
  issuer: string;
  subject: string;
  preferredUsername?: string;
  email?: string;
}

export interface UserRecord {
  userId: string;
  accountId: string;
  accountName: string;
  termsVersion: string | null;
}

/**
 * Finds the user an identity provider vouches for, creating the personal
 * account on first login. The name comes from `preferred_username`, else the
 * e-mail's local part; a valid free name is kept as it is, anything else is
 * sanitized and made unique with a numeric suffix.
 */
export async function findOrCreateUser(db: D1Database, identity: IdentityClaims, now: string): Promise<UserRecord> {
  const existing = await findUserByIdentity(db, identity);
  if (existing) return existing;

  const wanted = identity.preferredUsername || identity.email?.split("@")[0] || identity.subject;
  const base = isAccountName(wanted) ? wanted : sanitizeAccountName(wanted);
  for (let attempt = 1; attempt <= 50; attempt++) {
    const name = attempt === 1 ? base : `${base.slice(0, 64 - String(attempt).length - 1)}-${attempt}`;
    const accountId = randomToken(16);
    const userId = randomToken(16);
    const results = await db.batch([
      db
        .prepare("INSERT OR IGNORE INTO accounts (id, name, kind, created_at) VALUES (?, ?, 'user', ?)")
        .bind(accountId, name, now),
      db
        .prepare(
          `INSERT OR IGNORE INTO users (id, account_id, issuer, subject, email, created_at)
           SELECT ?, ?, ?, ?, ?, ? WHERE changes() = 1`,
        )
        .bind(userId, accountId, identity.issuer, identity.subject, identity.email ?? null, now),
    ]);
    if (results[1]?.meta.changes === 1) return { userId, accountId, accountName: name, termsVersion: null };
    // Either the name was taken, or the same person logged in twice at once.
    const raced = await findUserByIdentity(db, identity);
    if (raced) {
      await db
        .prepare("DELETE FROM accounts WHERE id = ? AND NOT EXISTS (SELECT 1 FROM users WHERE account_id = ?)")
        .bind(accountId, accountId)
        .run();
      return raced;
    }
  }
  throw new Error("could not find a free account name");
}

async function findUserByIdentity(db: D1Database, identity: IdentityClaims): Promise<UserRecord | null> {
  return db
    .prepare(
      `SELECT u.id AS userId, a.id AS accountId, a.name AS accountName, u.terms_version AS termsVersion
       FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.issuer = ? AND u.subject = ?`,
    )
    .bind(identity.issuer, identity.subject)
    .first<UserRecord>();
}

/** Records that the user accepted a terms version. */
export async function acceptTerms(db: D1Database, userId: string, version: string, now: string): Promise<void> {
  await db
    .prepare("UPDATE users SET terms_version = ?, terms_accepted_at = ? WHERE id = ?")
    .bind(version, now, userId)
    .run();
}

/** A user by id, or null. */
export async function findUserById(db: D1Database, userId: string): Promise<UserRecord | null> {
  return db
    .prepare(
      `SELECT u.id AS userId, a.id AS accountId, a.name AS accountName, u.terms_version AS termsVersion
       FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.id = ?`,
    )
    .bind(userId)
    .first<UserRecord>();
}
