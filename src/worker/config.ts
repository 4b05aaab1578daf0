/** The deployment's settings, read from `Env` and checked once per isolate (see settings()). */
export interface Settings {
  /** True only when the deployment says so explicitly (`ENVIRONMENT=development`). */
  development: boolean;
  /** PUBLIC_URL without a trailing slash, or null: each request's own origin (see requestConfig()). */
  publicUrl: string | null;
  /** The external OpenID Connect provider, or null for the built-in development provider. */
  oidc: { issuer: string; clientId: string; clientSecret: string; scopes: string } | null;
  termsVersion: string;
  termsUrl: string | null;
  limits: { maxUploadBytes: number; maxCsvBytes: number };
  query: QueryLimits;
  /** How many queries of one user run at once, and how many more may wait (docs/api.md). */
  fairShare: FairShare;
  downloadUrlTtlSeconds: number;
  /** Whether uploads and the cron ask the queue for query-ready forms (COLUMN_IMAGES "build", not "off"). */
  columnImages: boolean;
  /** R2 S3 API credentials for presigned download URLs, or null to sign the Worker's own /download/ URLs. */
  r2Presign: { accountId: string; bucketName: string; accessKeyId: string; secretAccessKey: string } | null;
}

/** The settings as one request sees them. */
export interface Config extends Settings {
  /** Origin tokens name as issuer and links point to, without a trailing slash. */
  publicUrl: string;
}

/** What one query may use (docs/api.md); each limit fails a query with a message naming it. */
export interface QueryLimits {
  maxSqlLength: number;
  timeLimitMs: number;
  maxLoadBytes: number;
  memoryBudgetBytes: number;
  maxResultBytes: number;
  maxResultRows: number;
  resultRetentionSeconds: number;
  /** Data items with at least this many rows get a table store and are queried there (TABLE_STORE_MIN_ROWS). */
  storeMinRows: number;
  /** The most a table store may hold, its rows and what a query brings in (TABLE_STORE_MAX_BYTES). */
  maxStoreBytes: number;
  /** Set by the quick lane's consumer, never recorded: work past this moves the query to the long lane. */
  quickLaneMs?: number;
}

/** How many of one user's queries may be in the engine at once, and how many more may wait. */
export interface FairShare {
  maxRunning: number;
  maxWaiting: number;
  /** A slot not given back within this long is taken back (its query's end was never reported). */
  leaseMs: number;
  /** After a query of theirs runs past the time limit, the user's next queries wait at least this long (UserQueries). */
  overrunCoolDownMs: number;
}

/** Secrets that a deployment may set but need not; `wrangler types` cannot express optional secrets. */
interface OptionalSecrets {
  R2_ACCESS_KEY_ID?: string;
  R2_SECRET_ACCESS_KEY?: string;
}

/** Client id and secret between the service and its built-in development provider (development mode only). */
export const DEV_IDP_CLIENT = { id: "dqs-dev", secret: "dqs-dev-secret" } as const;

export class ConfigError extends Error {
  override name = "ConfigError";
}

const parsed = new WeakMap<Env, Settings>();

/**
 * The deployment's settings, parsed and checked on first use of each `Env`
 * (the runtime hands an isolate one) and kept; every reader comes here.
 * Throws ConfigError naming the setting when the deployment cannot work as
 * configured; a failure is not kept, so each use fails as clearly.
 */
export function settings(env: Env): Settings {
  let found = parsed.get(env);
  if (!found) {
    found = parseSettings(env);
    parsed.set(env, found);
  }
  return found;
}

/** The settings for one request: the public origin is PUBLIC_URL, or when that is empty the request's own. */
export function requestConfig(env: Env, requestUrl: string): Config {
  const found = settings(env);
  return { ...found, publicUrl: found.publicUrl ?? new URL(requestUrl).origin };
}

function parseSettings(env: Env): Settings {
  const development = env.ENVIRONMENT === "development";
  const termsVersion = env.TERMS_VERSION?.trim();
  if (!termsVersion) throw new ConfigError("TERMS_VERSION is empty");
  let oidc: Settings["oidc"] = null;
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
  const secrets = env as Env & OptionalSecrets;
  const r2Presign =
    env.R2_ACCOUNT_ID && env.R2_BUCKET_NAME && secrets.R2_ACCESS_KEY_ID && secrets.R2_SECRET_ACCESS_KEY
      ? {
          accountId: env.R2_ACCOUNT_ID,
          bucketName: env.R2_BUCKET_NAME,
          accessKeyId: secrets.R2_ACCESS_KEY_ID,
          secretAccessKey: secrets.R2_SECRET_ACCESS_KEY,
        }
      : null;
  const columnImages = env.COLUMN_IMAGES || "build";
  if (columnImages !== "build" && columnImages !== "off")
    throw new ConfigError(`COLUMN_IMAGES must be "build" or "off"`);
  return {
    development,
    publicUrl: env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, "") : null,
    oidc,
    termsVersion,
    termsUrl: env.TERMS_URL || null,
    limits: {
      maxUploadBytes: positiveInteger(env, "MAX_UPLOAD_BYTES"),
      maxCsvBytes: positiveInteger(env, "MAX_CSV_BYTES"),
    },
    query: {
      maxSqlLength: positiveInteger(env, "MAX_SQL_LENGTH"),
      timeLimitMs: positiveInteger(env, "QUERY_TIME_LIMIT_SECONDS") * 1000,
      maxLoadBytes: positiveInteger(env, "QUERY_MAX_LOAD_BYTES"),
      memoryBudgetBytes: positiveInteger(env, "QUERY_MEMORY_BUDGET_BYTES"),
      maxResultBytes: positiveInteger(env, "QUERY_MAX_RESULT_BYTES"),
      maxResultRows: positiveInteger(env, "QUERY_MAX_RESULT_ROWS"),
      resultRetentionSeconds: positiveInteger(env, "QUERY_RESULT_RETENTION_SECONDS"),
      storeMinRows: positiveInteger(env, "TABLE_STORE_MIN_ROWS"),
      maxStoreBytes: positiveInteger(env, "TABLE_STORE_MAX_BYTES"),
    },
    fairShare: {
      maxRunning: positiveInteger(env, "QUERY_MAX_RUNNING_PER_USER"),
      maxWaiting: positiveInteger(env, "QUERY_MAX_QUEUED_PER_USER"),
      // Longer than any run with its retries: a slot whose end was never reported is taken back after this.
      leaseMs: positiveInteger(env, "QUERY_TIME_LIMIT_SECONDS") * 3000 + 300_000,
      overrunCoolDownMs: positiveInteger(env, "QUERY_OVERRUN_COOLDOWN_SECONDS") * 1000,
    },
    downloadUrlTtlSeconds: positiveInteger(env, "DOWNLOAD_URL_TTL_SECONDS"),
    columnImages: columnImages === "build",
    r2Presign,
  };
}

type IntegerSetting =
  | "MAX_UPLOAD_BYTES"
  | "MAX_CSV_BYTES"
  | "DOWNLOAD_URL_TTL_SECONDS"
  | "MAX_SQL_LENGTH"
  | "QUERY_TIME_LIMIT_SECONDS"
  | "QUERY_MAX_LOAD_BYTES"
  | "QUERY_MEMORY_BUDGET_BYTES"
  | "QUERY_MAX_RESULT_BYTES"
  | "QUERY_MAX_RESULT_ROWS"
  | "QUERY_RESULT_RETENTION_SECONDS"
  | "QUERY_MAX_RUNNING_PER_USER"
  | "QUERY_MAX_QUEUED_PER_USER"
  | "QUERY_OVERRUN_COOLDOWN_SECONDS"
  | "TABLE_STORE_MIN_ROWS"
  | "TABLE_STORE_MAX_BYTES";

function positiveInteger(env: Env, name: IntegerSetting): number {
  const value = Number(env[name]);
  if (!Number.isSafeInteger(value) || value <= 0) throw new ConfigError(`${name} must be a positive integer`);
  return value;
}

/** The built-in development provider is served only in development mode without an external provider. */
export function devIdpEnabled(config: Settings): boolean {
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
