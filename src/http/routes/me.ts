import { createRoute } from "@hono/zod-openapi";
import type { AppEnv } from "../context";
import { requireAuth } from "../middleware/bearer-auth";
import { createRouter } from "../router";
import { DatasetListResponse, envelope, errorResponses, jsonResponse } from "../schemas";

export const meRoutes = createRouter();

meRoutes.openapi(
  createRoute({
    method: "get",
    path: "/me/datasets",
    tags: ["user"],
    summary: "List the caller's own datasets",
    security: [{ Bearer: [] }],
    middleware: [requireAuth] as const,
    responses: {
      200: jsonResponse(DatasetListResponse, "The datasets owned by the caller"),
      ...errorResponses([401, "Missing or invalid access token"]),
    },
  }),
  async (c) => {
    const datasets: { AccountName: string; DatasetName: string }[] = [];
    return c.json({ ...envelope(200, "OK"), Data: { DatasetCount: datasets.length, DatasetList: datasets } }, 200);
  },
);
