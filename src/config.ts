/** The deployment's settings, read from `Env` once per request and checked. */
export interface Config {
  /** True only when the deployment says so explicitly (`ENVIRONMENT=development`). */
  development: boolean;
  /** Origin tokens name as issuer and links point to, without a trailing slash. */
  publicUrl: string;
  /** The external OpenID Connect provider, or null for the built-in development provider. */
  oidc: { issuer: string; clientId: string; clientSecret: string; scopes: string } | null;
  termsVersion: string;
  termsUrl: string | null;
}

/** Client id and secret between the service and its built-in development provider (development mode only). */
export const DEV_IDP_CLIENT = { id: "dqs-dev", secret: "dqs-dev-secret" } as const;

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Reads the configuration; throws ConfigError for a deployment that cannot work as configured. */
export function readConfig(env: Env, requestUrl: string): Config {
  const development = env.ENVIRONMENT === "development";
  const publicUrl = (env.PUBLIC_URL || new URL(requestUrl).origin).replace(/\/+$/, "");
  const termsVersion = env.TERMS_VERSION?.trim();
  if (!termsVersion) throw new ConfigError("TERMS_VERSION is empty");
  let oidc: Config["oidc"] = null;
  if (env.OIDC_ISSUER) {
    if (!env.OIDC_CLIENT_ID || !env.OIDC_CLIENT_SECRET)
      throw new ConfigError("OIDC_ISSUER is set but OIDC_CLIENT_ID or OIDC_CLIENT_SECRET is missing");
    oidc = {
      issuer: env.OIDC_ISSUER.replace(/\/+$/, ""),
      clientId: env.OIDC_CLIENT_ID,
      clientSecret: env.OIDC_CLIENT_SECRET,
      scopes: env.OIDC_SCOPES || "openid profile email",
    };
  } else if (!development) {
    throw new ConfigError("OIDC_ISSUER is not set; outside development mode an external identity provider is required");
  }
  return { development, publicUrl, oidc, termsVersion, termsUrl: env.TERMS_URL || null };
}

/** The built-in development provider is served only in development mode without an external provider. */
export function devIdpEnabled(config: Config): boolean {
  return config.development && config.oidc === null;
}

/** The provider the login flow talks to: the configured one, or the built-in development provider. */
export function identityProvider(config: Config): {
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string;
} {
  return (
    config.oidc ?? {
      issuer: `${config.publicUrl}/idp`,
      clientId: DEV_IDP_CLIENT.id,
      clientSecret: DEV_IDP_CLIENT.secret,
      scopes: "openid profile email",
    }
  );
}
