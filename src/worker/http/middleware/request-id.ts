import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";

/** Longest client-sent X-Request-Id kept for the logs; the rest is cut off. */
const CLIENT_ID_MAX_LENGTH = 200;

/**
 * Gives every request the service's own id: the response's `X-Request-Id`,
 * quoted by 500 messages and logged with every error. A client's own
 * `X-Request-Id` never replaces it (a client could otherwise pass another
 * request's id, or one shared by many, and confuse the logs); it is kept as
 * `clientRequestId` and logged beside it.
 */
export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  c.set("receivedAt", Date.now());
  const id = crypto.randomUUID();
  c.set("requestId", id);
  const clientId = c.req.header("x-request-id");
  if (clientId) c.set("clientRequestId", clientId.slice(0, CLIENT_ID_MAX_LENGTH));
  c.header("X-Request-Id", id);
  await next();
});
