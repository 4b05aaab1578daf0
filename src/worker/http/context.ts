import type { Context } from "hono";
import { loadKeys } from "../auth/keys";
import type { TokenContext } from "../auth/tokens";
import type { Principal } from "../catalog/accounts";
import type { Config } from "../config";

/** Hono environment of every route: the bindings, and what middleware put on the context. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    config: Config;
    principal: Principal;
    /** The service's own id of this request (middleware/request-id.ts). */
    requestId: string;
    /** When the request reached the service (middleware/request-id.ts): a wait the client asked for counts from it. */
    receivedAt: number;
    /** The client's X-Request-Id, if it sent one: for logs only. */
    clientRequestId?: string;
  };
}

export type AppContext = Context<AppEnv>;

/** What issuing and checking tokens needs, from the request's configuration. */
export async function tokenContext(c: AppContext): Promise<TokenContext> {
  const config = c.get("config");
  return {
    db: c.env.DB,
    keys: await loadKeys(c.env, config),
    issuer: config.publicUrl,
    termsVersion: config.termsVersion,
  };
}
