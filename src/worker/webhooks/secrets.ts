import { isoSeconds, nowSeconds } from "../util/time";
import { newWebhookSecret } from "./signature";

/** After a rotation, webhooks are signed with the secret before it too for this long (a receiver's switch-over). */
export const PREVIOUS_SECRET_GRACE_SECONDS = 86_400;

/** The user's webhook signing secret, created on first use (table webhook_secrets). */
export async function webhookSecret(db: D1Database, userId: string): Promise<string> {
  const found = await db
    .prepare("SELECT secret FROM webhook_secrets WHERE user_id = ?")
    .bind(userId)
    .first<string>("secret");
  if (found) return found;
  // Two first uses at once: the second keeps the first one's secret (the no-op update lets RETURNING answer).
  const created = await db
    .prepare(
      `INSERT INTO webhook_secrets (user_id, secret, created_at) VALUES (?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET secret = webhook_secrets.secret RETURNING secret`,
    )
    .bind(userId, newWebhookSecret(), isoSeconds(nowSeconds()))
    .first<string>("secret");
  if (!created) throw new Error("webhook secret not stored");
  return created;
}

/** Replaces the user's secret with a new one (creating it if there was none); the old one signs for a day more. */
export async function rotateWebhookSecret(db: D1Database, userId: string): Promise<string> {
  // SET reads the row as it was, so previous_secret takes the secret being replaced.
  const rotated = await db
    .prepare(
      `INSERT INTO webhook_secrets (user_id, secret, created_at) VALUES (?1, ?2, ?3)
       ON CONFLICT (user_id) DO UPDATE SET previous_secret = webhook_secrets.secret, secret = excluded.secret,
         rotated_at = excluded.created_at
       RETURNING secret`,
    )
    .bind(userId, newWebhookSecret(), isoSeconds(nowSeconds()))
    .first<string>("secret");
  if (!rotated) throw new Error("webhook secret not stored");
  return rotated;
}

/** The secrets a webhook is signed with now: the user's secret, and the one before it within a day of a rotation. */
export async function signingSecrets(db: D1Database, userId: string): Promise<string[]> {
  const row = await db
    .prepare("SELECT secret, previous_secret, rotated_at FROM webhook_secrets WHERE user_id = ?")
    .bind(userId)
    .first<{ secret: string; previous_secret: string | null; rotated_at: string | null }>();
  if (!row) return [await webhookSecret(db, userId)];
  const graceFrom = isoSeconds(nowSeconds() - PREVIOUS_SECRET_GRACE_SECONDS);
  return row.previous_secret && row.rotated_at && row.rotated_at > graceFrom
    ? [row.secret, row.previous_secret]
    : [row.secret];
}
