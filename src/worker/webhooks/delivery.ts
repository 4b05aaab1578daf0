import { settings } from "../config";
import { queryStatusData } from "../http/query-wire";
import { findQuery } from "../query/history";
import { queryRecord, type QueryRecord } from "../query/query-record";
import { isoSeconds, nowSeconds } from "../util/time";
import { checkCallbackUrl } from "./callback-url";
import type { WebhookDelivery, WebhookMessage } from "./completion";
import { signingSecrets } from "./secrets";
import { webhookSignature } from "./signature";

/** Attempts in all: the first and one after each delay below. */
export const MAX_ATTEMPTS = 6;
/** Seconds before attempt n + 1 after attempt n failed. */
const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200] as const;
/** A receiver that has not answered (status and headers) within this long has failed the attempt. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Error texts from the network are cut to this length before they are stored. */
const MAX_ERROR_LENGTH = 300;

/** Delay before the attempt after attempt n (1-based). */
export function retryDelaySeconds(attempt: number): number {
  return RETRY_DELAYS_SECONDS[Math.min(Math.max(attempt, 1), RETRY_DELAYS_SECONDS.length) - 1]!;
}

/** How deliveries go out; tests give their own fetch and a short timeout. */
export interface DeliveryOptions {
  send?: (url: string, init: RequestInit) => Promise<Response>;
  timeoutMs?: number;
}

/**
 * The webhook queue's consumer (API Worker): delivers each finished query's
 * completion webhook, all messages of a batch at once so one slow receiver
 * delays no other by more than the timeout. Each attempt is recorded in D1
 * (`webhook_deliveries`; the query's status shows the latest); a failed one
 * is retried with backoff until MAX_ATTEMPTS. The body is the query's
 * status Data, signed per Standard Webhooks with the owner's secret;
 * `webhook-id` is the QueryId, the same on every attempt, for receivers to
 * drop repeats.
 */
export async function consumeWebhooks(
  batch: MessageBatch<WebhookMessage>,
  env: Env,
  options: DeliveryOptions = {},
): Promise<void> {
  await Promise.all(batch.messages.map((message) => deliverMessage(message, env, options)));
}

async function deliverMessage(message: Message<WebhookMessage>, env: Env, options: DeliveryOptions): Promise<void> {
  const { queryId } = message.body;
  try {
    // The query's row: its end (published before the message was sent) and its Callback.
    const row = await findQuery(env.DB, queryId);
    if (!row?.end || !row.callback) {
      message.ack();
      return;
    }
    const record = queryRecord(row, row.end);
    const url = row.callback.url;
    const attempt = message.attempts;
    const outcome = await attemptDelivery(env, record, url, options);
    const retry = !outcome.delivered && !outcome.final && attempt < MAX_ATTEMPTS;
    const delaySeconds = retryDelaySeconds(attempt);
    await recordAttempt(env.DB, queryId, url, {
      attempt,
      at: outcome.at,
      statusCode: outcome.statusCode,
      error: outcome.error,
      delivered: outcome.delivered,
      nextAttemptAt: retry ? isoSeconds(nowSeconds() + delaySeconds) : null,
      durationMs: outcome.durationMs,
    });
    if (retry) message.retry({ delaySeconds });
    else message.ack();
  } catch (error) {
    // Reading the query or the secret failed: the queue tries again (its max_retries bounds this).
    console.error(JSON.stringify({ queryId, step: "deliver completion webhook", error: String(error) }));
    message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
  }
}

interface AttemptOutcome {
  at: string;
  statusCode: number | null;
  error: string | null;
  delivered: boolean;
  /** Trying again cannot help (the URL is refused now). */
  final: boolean;
  durationMs: number;
}

async function attemptDelivery(
  env: Env,
  record: QueryRecord,
  url: string,
  options: DeliveryOptions,
): Promise<AttemptOutcome> {
  const at = isoSeconds(nowSeconds());
  // Checked again: the URL was accepted at submit, perhaps under other settings (development mode).
  const check = checkCallbackUrl(url, settings(env).development);
  if (!check.ok) return { at, statusCode: null, error: check.message, delivered: false, final: true, durationMs: 0 };
  const body = JSON.stringify(queryStatusData(record));
  const timestamp = nowSeconds();
  const headers = {
    "content-type": "application/json",
    "user-agent": "dqs-webhooks",
    "webhook-id": record.queryId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": await webhookSignature(
      await signingSecrets(env.DB, record.ownerUserId),
      record.queryId,
      timestamp,
      body,
    ),
  };
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const send = options.send ?? ((target, init) => fetch(target, init));
  const started = Date.now();
  const outcome = (statusCode: number | null, error: string | null): AttemptOutcome => ({
    at,
    statusCode,
    error: error && error.slice(0, MAX_ERROR_LENGTH),
    delivered: error === null,
    final: false,
    durationMs: Date.now() - started,
  });
  try {
    // A redirect is an answer, never followed: following it would let a public URL lead past the guard.
    const response = await send(check.url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    // The receiver's body is not read: nothing in it matters, and a large one would only hold the consumer.
    await response.body?.cancel();
    if (response.status >= 200 && response.status < 300) return outcome(response.status, null);
    if (response.status >= 300 && response.status < 400)
      return outcome(
        response.status,
        `The receiver answered ${response.status} (a redirect); redirects are not followed.`,
      );
    return outcome(response.status, `The receiver answered ${response.status}.`);
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    if (name === "TimeoutError" || name === "AbortError")
      return outcome(null, `The receiver did not answer within ${timeoutMs / 1000} s.`);
    return outcome(
      null,
      `The receiver could not be reached: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * Records an attempt in D1 (webhook_deliveries), where the query's status
 * reads its latest; a failure here is only logged, the delivery stands.
 */
async function recordAttempt(
  db: D1Database,
  queryId: string,
  url: string,
  delivery: WebhookDelivery & { durationMs: number },
): Promise<void> {
  try {
    await db
      .prepare(
        `INSERT INTO webhook_deliveries
           (query_id, attempt, url, status_code, error, delivered, next_attempt_at, at, duration_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (query_id, attempt) DO UPDATE SET status_code = excluded.status_code, error = excluded.error,
           delivered = excluded.delivered, next_attempt_at = excluded.next_attempt_at, at = excluded.at,
           duration_ms = excluded.duration_ms`,
      )
      .bind(
        queryId,
        delivery.attempt,
        url,
        delivery.statusCode,
        delivery.error,
        delivery.delivered ? 1 : 0,
        delivery.nextAttemptAt,
        delivery.at,
        delivery.durationMs,
      )
      .run();
  } catch (error) {
    console.error(JSON.stringify({ queryId, step: "record webhook attempt", error: String(error) }));
  }
}
