import type { OpenAPIHono } from "@hono/zod-openapi";
import { swaggerUI } from "@hono/swagger-ui";
import type { AppEnv } from "./context";

const TAGS = [
  { name: "auth", description: "Log in, renew and revoke tokens" },
  { name: "user", description: "The caller's own resources" },
  { name: "account", description: "Resources of a named account" },
  { name: "dataset", description: "Datasets and their data items" },
  { name: "data", description: "Upload, download and schemas of data items" },
  { name: "query", description: "SQL queries and their results" },
  { name: "experimental", description: "May change greatly or be removed without notice; not for general use" },
];

/** Serves the OpenAPI 3.1 document generated from the version 1 routes themselves, and a page for people. */
export function mountOpenApi(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "Bearer", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "Access token from GET /v1/auth or POST /v1/auth/token",
  });
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
  app.get("/docs", swaggerUI({ url: "/v1/openapi.json", title: "dqs API" }));
}
