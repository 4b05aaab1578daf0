import { Hono } from "hono";
import { endConsoleSession } from "../../auth/console-sessions";
import type { AppEnv } from "../context";
import { unauthorized } from "../errors";
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

consoleRoutes.get(
  "/console/session",
  async (c, next) => {
    if (!consoleCookie(c) && !c.req.header("authorization"))
      throw unauthorized("You are not signed in to the console; sign in at /console/sign-in.");
    await next();
  },
  requireAuth,
  (c) => {
    c.header("Cache-Control", "no-store");
    return c.json({ ...envelope(200, "Signed in"), Data: { AccountName: c.get("principal").accountName } }, 200);
  },
);

/** Revokes the cookie's session and forgets the cookie; a session that has already ended is signed out all the same. */
consoleRoutes.post("/console/sign-out", async (c) => {
  checkConsoleRequest(c);
  const cookie = consoleCookie(c);
  if (cookie) await endConsoleSession(c.env.DB, cookie);
  clearConsoleCookie(c);
  c.header("Cache-Control", "no-store");
  return c.json(envelope(200, "Signed out; the console session no longer works"), 200);
});
