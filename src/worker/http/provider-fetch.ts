import type { ProviderFetch } from "../auth/oidc-client";
import { devIdpEnabled } from "../config";
import { devIdp } from "../dev-idp/app";
import type { AppContext } from "./context";

/**
 * Requests to the identity provider. The built-in development provider lives
 * in this Worker, so its requests are served in-process (a Worker cannot
 * reliably fetch its own origin); any other provider is reached over HTTP.
 */
export function providerFetch(c: AppContext): ProviderFetch {
  const config = c.get("config");
  const devIssuer = devIdpEnabled(config) ? `${config.publicUrl}/idp/` : null;
  return async (url, init) => {
    if (devIssuer && url.startsWith(devIssuer)) {
      const path = url.slice(config.publicUrl.length + "/idp".length);
      return devIdp.fetch(new Request(new URL(path, `${config.publicUrl}/`).toString(), init), c.env, c.executionCtx);
    }
    return fetch(url, init);
  };
}
