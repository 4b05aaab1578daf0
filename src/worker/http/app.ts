import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { bodyLimit } from "hono/body-limit";
import { methodNotAllowed } from "hono/method-not-allowed";
import { ConfigError, devIdpEnabled, requestConfig } from "../config";
import { devIdp } from "../dev-idp/app";
import type { AppContext, AppEnv } from "./context";
import { ApiError } from "./errors";
import { authRateLimit } from "./middleware/rate-limit";
import { requestId } from "./middleware/request-id";
import { consoleSecurityHeaders, securityHeaders } from "./middleware/security-headers";
import { mountOpenApi } from "./openapi";
import { createRouter } from "./router";
import { accountRoutes } from "./routes/account";
import { staticAsset } from "./routes/assets";
import { authRoutes } from "./routes/auth";
import { consoleRoutes } from "./routes/console";
import { dataRoutes } from "./routes/data";
import { datasetRoutes } from "./routes/dataset";
import { downloadRoutes } from "./routes/download";
import { meRoutes } from "./routes/me";
import { queryRoutes } from "./routes/query";
import { queryResultRoutes } from "./routes/query-results";
import { queryValidateRoutes } from "./routes/query-validate";
import { webhookSecretRoutes } from "./routes/webhook-secret";
import { wellKnownRoutes } from "./routes/well-known";
import { envelope } from "./schemas";
import { isStorageBusy } from "../storage/busy-retry";

/**
 * A query's body is its SQL and Parameters, each held to MAX_SQL_LENGTH
 * characters: a larger body is refused before it is read, rather than parsed
 * whole into the isolate's memory. The room allows both at the limit even
 * written as JSON escapes (six bytes a character), and the rest of the body.
 */
const queryBodyLimit = createMiddleware<AppEnv>(async (c, next) => {
  const maxSize = 12 * c.get("config").query.maxSqlLength + 64 * 1024;
  return bodyLimit({
    maxSize,
    onError: () => {
      throw new ApiError(
        413,
        `The request body is larger than ${maxSize} bytes; a query's Sql and Parameters are each at most ${c.get("config").query.maxSqlLength} characters.`,
      );
    },
  })(c, next);
});

const withConfig = createMiddleware<AppEnv>(async (c, next) => {
  c.set("config", requestConfig(c.env, c.req.url));
  await next();
});

/** Builds the HTTP application: every route of version 1, the development provider, and the error funnel. */
export function createApp(): OpenAPIHono<AppEnv> {
  const app = createRouter();
  app.use("*", requestId);
  // Before withConfig, so that a configuration error's 500 carries the headers too.
  app.use("*", securityHeaders);
  // The console's pages run its scripts; inside, so that its policy wins over the default one.
  app.use("/console/*", consoleSecurityHeaders);
  app.use("*", withConfig);
  app.use("*", methodNotAllowed({ app, onMethodNotAllowed: wrongMethod }));
  // Bearer tokens, not cookies, authorise API calls, so any origin may call them.
  app.use(
    "/v1/*",
    cors({ origin: "*", exposeHeaders: ["X-Request-Id", "Location", "Retry-After", "WWW-Authenticate"], maxAge: 600 }),
  );

  for (const path of [
    "/v1/auth",
    "/v1/auth/callback",
    "/v1/auth/terms",
    "/v1/auth/token",
    "/console/sign-in",
    "/idp/*",
  ])
    app.use(path, authRateLimit);

  // A signed download URL is its own credential, so a page on any origin may read it (the SDK in a browser).
  app.use(
    "/download/*",
    cors({
      origin: "*",
      allowMethods: ["GET", "HEAD"],
      allowHeaders: ["Range"],
      exposeHeaders: ["Content-Length", "Content-Range", "Content-Disposition", "ETag", "Accept-Ranges"],
      maxAge: 600,
    }),
  );

  for (const path of ["/v1/query", "/v1/query/validate"]) app.post(path, queryBodyLimit);

  const v1 = createRouter();
  v1.route("/", authRoutes);
  v1.route("/", meRoutes);
  v1.route("/", accountRoutes);
  v1.route("/", datasetRoutes);
  v1.route("/", dataRoutes);
  v1.route("/", queryValidateRoutes);
  v1.route("/", queryRoutes);
  v1.route("/", webhookSecretRoutes);
  v1.route("/", queryResultRoutes);
  mountOpenApi(v1);

  app.route("/v1", v1);
  app.route("/", wellKnownRoutes);
  app.route("/", consoleRoutes);
  app.route("/", downloadRoutes);
  app.route("/idp", devIdp as unknown as Hono<AppEnv>);

  // What no route answers may be a static file (the console, the landing page), else it is the envelope's 404.
  app.notFound(async (c) => (await staticAsset(c)) ?? noSuchEndpoint(c));
  app.onError((error, c) => errorResponse(error, c));
  return app;
}

/** A path that exists for other methods: 405 in the envelope, with `Allow` (hono's middleware finds the methods). */
function wrongMethod(c: AppContext, methods: string[]) {
  // Outside development mode the built-in provider does not exist, not even as a 405.
  if (c.req.path.startsWith("/idp") && !devIdpEnabled(c.get("config"))) return noSuchEndpoint(c);
  const allow = methods.sort().join(", ");
  return c.json(envelope(405, `Method ${c.req.method} is not allowed on ${c.req.path}; use ${allow}.`), 405, {
    Allow: allow,
  });
}

function noSuchEndpoint(c: AppContext) {
  return c.json(
    envelope(404, `No such endpoint: ${c.req.method} ${c.req.path}. The API is described at /v1/openapi.json.`),
    404,
  );
}

/** The one error funnel: known errors become their envelope, anything else a logged, generic 500. */
function errorResponse(error: Error, c: AppContext) {
  if (error instanceof ApiError) {
    for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
    return c.json(envelope(error.status, error.message), error.status);
  }
  if (error instanceof HTTPException && error.status < 500) {
    // Hono's own client errors (e.g. malformed JSON) carry safe, generic messages; a 415 comes from a route that
    // validates a JSON body (the upload answers its own), so it can say what to send.
    const message =
      error.status === 415
        ? "Send the body as JSON, with the header Content-Type: application/json"
        : error.message || "The request could not be understood.";
    return c.json(envelope(error.status, message.endsWith(".") ? message : `${message}.`), error.status);
  }
  const id = c.get("requestId");
  if (isStorageBusy(error)) {
    // The local service's processes share one state; D1 is tried again while locked (busy-retry.ts), R2 is not.
    c.header("Retry-After", "1");
    return c.json(envelope(503, `The service's storage was busy; send the request again (request id ${id}).`), 503);
  }
  console.error(
    JSON.stringify({
      requestId: id,
      clientRequestId: c.get("clientRequestId"),
      method: c.req.method,
      path: c.req.path,
      error: error instanceof ConfigError ? `configuration: ${error.message}` : String(error),
      stack: error.stack,
    }),
  );
  return c.json(envelope(500, `Internal error; if it persists, report request id ${id}.`), 500);
}
