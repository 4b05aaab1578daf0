import { createMiddleware } from "hono/factory";
import type { AppContext, AppEnv } from "../context";
import { ApiError } from "../errors";

/** Both limiters count per minute (wrangler.toml), so a refused caller can retry after at most that. */
const RETRY_AFTER_SECONDS = 60;

/** Throws 429 with Retry-After when `key` has used up its requests for this minute. */
export async function enforceRateLimit(limiter: RateLimit, key: string): Promise<void> {
  const { success } = await limiter.limit({ key });
  if (!success)
    throw new ApiError(429, `Too many requests; wait ${RETRY_AFTER_SECONDS} seconds and try again.`, {
      "Retry-After": String(RETRY_AFTER_SECONDS),
    });
}

function clientAddress(c: AppContext): string {
  return c.req.header("cf-connecting-ip") ?? c.req.header("x-real-ip") ?? "unknown";
}

/** Limits the unauthenticated auth endpoints by client address (guessing refresh tokens, flooding logins). */
export const authRateLimit = createMiddleware<AppEnv>(async (c, next) => {
  await enforceRateLimit(c.env.AUTH_RATE_LIMITER, clientAddress(c));
  await next();
});
