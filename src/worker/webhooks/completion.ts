/** A query's completion webhook as its status shows it: where to, and how the latest attempt went. */
export interface QueryCallback {
  url: string;
  /** Null before the first attempt. */
  lastDelivery: WebhookDelivery | null;
}

/** One attempt to deliver a completion webhook (a row of webhook_deliveries). */
export interface WebhookDelivery {
  /** 1 for the first attempt. */
  attempt: number;
  at: string;
  /** The receiver's HTTP status; null when it gave none (no connection, no answer in time, URL refused). */
  statusCode: number | null;
  /** Why the attempt failed; null when the receiver answered 2xx. */
  error: string | null;
  delivered: boolean;
  /** When the next attempt is due; null when delivered or given up. */
  nextAttemptAt: string | null;
}

/** The queue of completion webhooks (wrangler.toml), produced by QueryState and consumed by the API Worker. */
export const WEBHOOK_QUEUE_NAME = "dqs-webhooks";

/** What the webhook queue carries: the query; its D1 row says where to and what. */
export interface WebhookMessage {
  queryId: string;
}

/** Hands a finished query's completion webhook to the queue; false (logged) when the queue refused it. */
export async function enqueueCompletion(env: Env, queryId: string): Promise<boolean> {
  try {
    await env.WEBHOOK_QUEUE.send({ queryId } satisfies WebhookMessage);
    return true;
  } catch (error) {
    console.error(JSON.stringify({ queryId, step: "enqueue completion webhook", error: String(error) }));
    return false;
  }
}
