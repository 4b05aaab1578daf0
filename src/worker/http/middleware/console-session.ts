import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AppContext } from "../context";
import { ApiError } from "../errors";

/** The web console's session cookie; over https it is `__Host-` prefixed, so no other host of the site can set it. */
const COOKIE = "dqs_console";

/**
 * The header the console sends with every request that changes something. A
 * cross-site form cannot send a header, and a cross-origin script cannot send
 * it with cookies (CORS never allows credentials here), so with the Origin
 * check it stops cross-site request forgery (OWASP: custom request headers).
 */
export const CONSOLE_HEADER = "X-Dqs-Console";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

function isSecure(c: AppContext): boolean {
  return c.get("config").publicUrl.startsWith("https:");
}

/** The console cookie's value, if the request carries one. */
export function consoleCookie(c: AppContext): string | undefined {
  return getCookie(c, COOKIE, isSecure(c) ? "host" : undefined);
}

/**
 * Sets the console cookie: HttpOnly (no script reads it), SameSite=Strict (no
 * other site's page or link sends it), Secure except on a plain-http
 * development origin, for the whole origin, until the session expires.
 */
export function setConsoleCookie(c: AppContext, value: string, expiresAt: number): void {
  const secure = isSecure(c);
  setCookie(c, COOKIE, value, {
    path: "/",
    httpOnly: true,
    sameSite: "Strict",
    secure,
    expires: new Date(expiresAt * 1000),
    ...(secure ? { prefix: "host" as const } : {}),
  });
}

/** Tells the browser to forget the console cookie. */
export function clearConsoleCookie(c: AppContext): void {
  const secure = isSecure(c);
  deleteCookie(c, COOKIE, { path: "/", secure, ...(secure ? { prefix: "host" as const } : {}) });
}

/**
 * Refuses (403) a cookie-authenticated request that changes something unless
 * it comes from a page of this origin (Origin) and carries the console's header.
 */
export function checkConsoleRequest(c: AppContext): void {
  if (SAFE_METHODS.has(c.req.method)) return;
  const expected = new URL(c.get("config").publicUrl).origin;
  if (c.req.header("origin") !== expected || c.req.header(CONSOLE_HEADER) !== "1")
    throw new ApiError(
      403,
      `A request signed in with the console's cookie that changes something must come from the console: a page of ${expected} sending ${CONSOLE_HEADER}: 1. Programs send 'Authorization: Bearer <access token>' instead.`,
    );
}
