import { OpenAPIHono, type Hook } from "@hono/zod-openapi";
import type { AppEnv } from "./context";
import { badRequest } from "./errors";

/** Turns a failed request validation into a 400 whose message names each field and problem. */
const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (result.success) return;
  const problems = result.error.issues.map((issue) => {
    const where = issue.path.length > 0 ? issue.path.join(".") : "body";
    return `${result.target === "json" ? "" : `${result.target} `}${where}: ${issue.message}`;
  });
  throw badRequest(`Invalid request: ${problems.join("; ")}.`);
};

/** A router whose routes feed the OpenAPI document and validate requests with the same schemas. */
export function createRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
