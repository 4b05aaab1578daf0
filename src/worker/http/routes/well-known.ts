import { Hono } from "hono";
import { loadKeys } from "../../auth/keys";
import type { AppEnv } from "../context";

export const wellKnownRoutes = new Hono<AppEnv>();

/** The public halves of the signing keys, so anyone can verify an access token offline. */
wellKnownRoutes.get("/.well-known/jwks.json", async (c) => {
  const keys = await loadKeys(c.env, c.get("config"));
  c.header("Cache-Control", "public, max-age=300");
  return c.json(keys.publicJwks);
});
