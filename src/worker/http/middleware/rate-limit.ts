import { createMiddleware } from "hono/factory";
import type { AppContext, AppEnv } from "../context";
import { ApiError } from "../errors";

/** Both limiters count per minute (wrangler.toml), so a refused caller can retry after at most that. */
const RETRY_AFTER_SECONDS = 60;

/** The one key of every request whose client address is not known: they are limited together. */
const UNKNOWN_CLIENT_KEY = "address:unknown";

/** Throws 429 with Retry-After when `key` has used up its requests for this minute. */
export async function enforceRateLimit(limiter: RateLimit, key: string): Promise<void> {
  const { success } = await limiter.limit({ key });
  if (!success)
    throw new ApiError(429, `Too many requests; wait ${RETRY_AFTER_SECONDS} seconds and try again.`, {
      "Retry-After": String(RETRY_AFTER_SECONDS),
    });
}

/** The first four groups of an IPv6 address (its /64), normalised; null if it is not one. */
function ipv6Prefix64(address: string): string | null {
  const parts = address.toLowerCase().split("::");
  if (parts.length > 2) return null;
  const [head = [], tail] = parts.map((part) => (part ? part.split(":") : []));
  // A dotted IPv4 at the end (::ffff:192.0.2.1) stands for the last two groups.
  const groups = (tail ?? head).at(-1)?.includes(".") ? 7 : 8;
  const zeros = tail ? groups - head.length - tail.length : 0;
  if (tail ? zeros < 1 : head.length !== groups) return null;
  const prefix = [...head, ...Array<string>(zeros).fill("0"), ...(tail ?? [])].slice(0, 4);
  if (!prefix.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return null;
  return prefix.map((group) => parseInt(group, 16).toString(16)).join(":");
}

/**
 * Whom an unauthenticated request counts against. Only CF-Connecting-IP is
 * used: Cloudflare's edge sets it and a client cannot choose it, whereas a
 * client writes X-Real-IP or X-Forwarded-For itself and could take a fresh
 * key for every request. Without it (a request that did not come through
 * the edge), or with an address that cannot be read, every such request
 * shares one key: limited, never unlimited. An IPv6 client usually holds a
 * whole /64, so the /64 is one client.
 */
function clientKey(c: AppContext): string {
  const address = c.req.header("cf-connecting-ip")?.trim() ?? "";
  // An IPv4-mapped IPv6 address (::ffff:192.0.2.1) is that IPv4 client.
  const ipv4 = address.match(/^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i)?.[1];
  if (ipv4) return `ipv4:${ipv4}`;
  const prefix = ipv6Prefix64(address);
  return prefix ? `ipv6:${prefix}::/64` : UNKNOWN_CLIENT_KEY;
}

/** Limits the unauthenticated auth endpoints by client address (guessing refresh tokens, flooding logins). */
export const authRateLimit = createMiddleware<AppEnv>(async (c, next) => {
  await enforceRateLimit(c.env.AUTH_RATE_LIMITER, clientKey(c));
  await next();
});
