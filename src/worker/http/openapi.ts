import type { OpenAPIHono } from "@hono/zod-openapi";
import { html } from "hono/html";
import { RESPONSE_HEADERS } from "./api-route";
import type { AppEnv } from "./context";
import { docsSecurityHeaders } from "./middleware/security-headers";

const TAGS = [
  { name: "auth", description: "Log in, renew and revoke tokens" },
  { name: "user", description: "The caller's own resources" },
  { name: "account", description: "Resources of a named account" },
  { name: "dataset", description: "Datasets and their data items" },
  { name: "data", description: "Upload, download and schemas of data items" },
  { name: "query", description: "SQL queries and their results" },
  { name: "experimental", description: "May change greatly or be removed without notice; not for general use" },
];

/** Swagger UI on the generated document; its files are static assets of this Worker (src/web/build.mjs copies them), none from a CDN. */
const DOCS_PAGE = html`<!doctype html>
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>dqs API</title>
      <link rel="icon" href="/assets/favicon.svg" type="image/svg+xml" />
      <link rel="stylesheet" href="/assets/swagger-ui.css" />
    </head>
    <body>
      <div id="swagger-ui"></div>
      <script src="/assets/swagger-ui-bundle.js"></script>
      <script src="/assets/docs.js"></script>
    </body>
  </html>`;

/** Serves the OpenAPI 3.1 document generated from the version 1 routes themselves, and a page for people. */
export function mountOpenApi(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "Bearer", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "Access token from GET /v1/auth or POST /v1/auth/token",
  });
  for (const [name, header] of Object.entries(RESPONSE_HEADERS))
    app.openAPIRegistry.registerComponent("headers", name, header);
  app.doc31("/openapi.json", (c) => ({
    openapi: "3.1.0",
    info: {
      title: "dqs — Dataset and Query Service",
      version: "0.0.0",
      description: "Upload CSV files into datasets, share them, and run SQL over them.",
    },
    servers: [{ url: `${c.get("config").publicUrl}/v1`, description: "This deployment" }],
    tags: TAGS,
  }));
  app.get("/docs", docsSecurityHeaders, (c) => c.html(DOCS_PAGE));
}
