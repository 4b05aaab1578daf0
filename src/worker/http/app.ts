import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { ConfigError, devIdpEnabled, requestConfig } from "../config";
import { devIdp } from "../dev-idp/app";
import type { AppContext, AppEnv } from "./context";
import { ApiError } from "./errors";
import { authRateLimit } from "./middleware/rate-limit";
import { requestId } from "./middleware/request-id";
import { securityHeaders } from "./middleware/security-headers";
import { mountOpenApi } from "./openapi";
import { createRouter } from "./router";
import { accountRoutes } from "./routes/account";
import { assetRoutes } from "./routes/assets";
import { authRoutes } from "./routes/auth";
import { dataRoutes } from "./routes/data";
import { datasetRoutes } from "./routes/dataset";
import { downloadRoutes } from "./routes/download";
import { meRoutes } from "./routes/me";
import { queryRoutes } from "./routes/query";
import { wellKnownRoutes } from "./routes/well-known";
import { envelope } from "./schemas";

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
  app.use("*", withConfig);
  // Bearer tokens, not cookies, authorise API calls, so any origin may call them.
  app.use(
    "/v1/*",
    cors({ origin: "*", exposeHeaders: ["X-Request-Id", "Location", "Retry-After", "WWW-Authenticate"], maxAge: 600 }),
  );

  for (const path of ["/v1/auth", "/v1/auth/callback", "/v1/auth/terms", "/v1/auth/token", "/idp/*"])
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

  const v1 = createRouter();
  v1.route("/", authRoutes);
  v1.route("/", meRoutes);
  v1.route("/", accountRoutes);
  v1.route("/", datasetRoutes);
  v1.route("/", dataRoutes);
  v1.route("/", queryRoutes);
  mountOpenApi(v1);

  app.route("/v1", v1);
  app.route("/", wellKnownRoutes);
  app.route("/", assetRoutes);
  app.route("/", downloadRoutes);
  app.route("/idp", devIdp as unknown as Hono<AppEnv>);

  app.notFound((c) => notFoundOrWrongMethod(app, c));
  app.onError((error, c) => errorResponse(error, c));
  return app;
}

/** 405 with `Allow` when the path exists for other methods, else 404; both in the envelope. */
function notFoundOrWrongMethod(app: Hono<AppEnv>, c: AppContext) {
  const path = c.req.path;
  const allowed = new Set<string>();
  // Outside development mode the built-in provider does not exist, not even as a 405.
  const hidden = (routePath: string) => routePath.startsWith("/idp") && !devIdpEnabled(c.get("config"));
  for (const route of app.routes) {
    if (hidden(route.path)) continue;
    if (route.method === "ALL" || !pathMatches(route.path, path)) continue;
    allowed.add(route.method);
    if (route.method === "GET") allowed.add("HEAD");
  }
  if (allowed.size > 0 && !allowed.has(c.req.method)) {
    const allow = [...allowed].sort().join(", ");
    c.header("Allow", allow);
    return c.json(envelope(405, `Method ${c.req.method} is not allowed on ${path}; use ${allow}.`), 405);
  }
  return c.json(
    envelope(404, `No such endpoint: ${c.req.method} ${path}. The API is described at /v1/openapi.json.`),
    404,
  );
}

function pathMatches(pattern: string, path: string): boolean {
  const want = pattern.split("/").filter(Boolean);
  const have = path.split("/").filter(Boolean);
  const segmentMatches = (part: string, i: number) => part.startsWith(":") || part === have[i];
  if (want[want.length - 1] === "*") return have.length >= want.length - 1 && want.slice(0, -1).every(segmentMatches);
  return want.length === have.length && want.every(segmentMatches);
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
