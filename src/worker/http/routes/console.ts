import { Hono } from "hono";
import { endConsoleSession } from "../../auth/console-sessions";
import type { AppEnv } from "../context";
import { ApiError } from "../errors";
import { requireAuth } from "../middleware/bearer-auth";
import { checkConsoleRequest, clearConsoleCookie, consoleCookie } from "../middleware/console-session";
import { envelope } from "../schemas";
import { redirectToProvider } from "./auth";

/**
 * The web console's sign-in, who-am-I and sign-out (its pages and scripts are
 * static assets under /console/). Not part of the API: programs use bearer
 * tokens from GET /v1/auth.
 */
export const consoleRoutes = new Hono<AppEnv>();

/** Starts the service's own login; it ends in a cookie session and a redirect to /console/ instead of the tokens page. */
consoleRoutes.get("/console/sign-in", (c) => redirectToProvider(c, { kind: "console" }));

/**
 * Who is signed in. Nobody (no cookie, or one whose session has ended) is an
 * answer, not an error: a 200 with AccountName null, so the signed-out
 * console's first request logs no failure in the browser's console.
 */
consoleRoutes.get("/console/session", async (c) => {
  c.header("Cache-Control", "no-store");
  const bearer = c.req.header("authorization") !== undefined;
  const nobody = (message: string) =>
    c.json({ ...envelope(200, message), Data: { AccountName: null as string | null } }, 200);
  if (!bearer && !consoleCookie(c)) return nobody("You are not signed in to the console; sign in at /console/sign-in.");
  try {
    await requireAuth(c, async () => {});
  } catch (error) {
    // A program's bad bearer token stays a 401; only the console's own cookie is answered as "nobody".
    if (!bearer && error instanceof ApiError && error.status === 401) return nobody(error.message);
    throw error;
  }
  return c.json({ ...envelope(200, "Signed in"), Data: { AccountName: c.get("principal").accountName } }, 200);
});

/** Revokes the cookie's session and forgets the cookie; a session that has already ended is signed out all the same. */
consoleRoutes.post("/console/sign-out", async (c) => {
  checkConsoleRequest(c);
  const cookie = consoleCookie(c);
  if (cookie) await endConsoleSession(c.env.DB, cookie);
  clearConsoleCookie(c);
  c.header("Cache-Control", "no-store");
  return c.json(envelope(200, "Signed out; the console session no longer works"), 200);
});
