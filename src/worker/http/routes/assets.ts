import type { AppContext } from "../context";

/** Paths the Worker answers itself: what no route there matches is the envelope's 404, never a file. */
const WORKER_PREFIXES = ["/v1", "/download", "/idp", "/.well-known"];

/**
 * The static file (wrangler.toml [assets]: the console, the landing page,
 * /assets/*) for a GET or HEAD that no route answered, or null when there is
 * none. The copy makes its headers writable, so the security headers
 * middleware puts the same headers on files as on everything else.
 */
export async function staticAsset(c: AppContext): Promise<Response | null> {
  if (c.req.method !== "GET" && c.req.method !== "HEAD") return null;
  const path = c.req.path;
  if (WORKER_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) return null;
  const response = await c.env.ASSETS.fetch(c.req.raw);
  if (response.status === 404) {
    await response.body?.cancel();
    return null;
  }
  return new Response(response.body, response);
}
