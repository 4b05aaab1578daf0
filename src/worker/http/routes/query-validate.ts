import { apiRoute } from "../api-route";
import { invalid, validateQuery } from "../../query/validate";
import { checkCallbackUrl } from "../../webhooks/callback-url";
import { authenticated } from "../middleware/bearer-auth";
import { createRouter } from "../router";
import { envelope, errorResponses, jsonResponse, QueryValidationResponse, SqlRequest } from "../schemas";

export const queryValidateRoutes = createRouter();

queryValidateRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/query/validate",
    tags: ["query", "experimental"],
    summary: "Check a query without running it",
    description:
      "Takes the body of POST /v1/query. Resolves the data item names as the caller may read them, checks the Parameters and that the SQL is one read-only statement, and derives the result's columns by preparing it on empty tables of the items' types; estimates the bytes the query would read (catalog figures) and names the engine the planner would pick. Runs nothing and loads no data. A query that would be refused or would fail answers 200 with Valid false and the same message.",
    ...authenticated,
    request: { body: { required: true, content: { "application/json": { schema: SqlRequest } } } },
    responses: {
      200: jsonResponse(QueryValidationResponse, "Whether the query is valid, and what it would return and read"),
      ...errorResponses(
        [400, "No JSON body, no Sql string, or Parameters of the wrong shape"],
        [413, "A body larger than Sql and Parameters at their length limit can be"],
        [415, "The body is not application/json"],
      ),
    },
  }),
  async (c) => {
    const { Sql, Parameters = null, Callback } = c.req.valid("json");
    // POST /v1/query refuses a Callback.Url outside the SSRF rule; validation says so, in the same words.
    const callback = Callback ? checkCallbackUrl(Callback.Url, c.get("config").development) : null;
    const validation =
      callback && !callback.ok
        ? invalid(callback.message)
        : await validateQuery(c.env, c.get("principal"), { sql: Sql, parameters: Parameters }, c.get("config").query);
    return c.json(
      {
        ...envelope(200, validation.valid ? "Valid" : "Not valid"),
        Data: {
          Valid: validation.valid,
          Message: validation.message,
          Columns: validation.columns.map((column) => ({ Name: column.name, DataType: column.type })),
          DataItems: validation.dataItems.map((item) => ({
            AccountName: item.account,
            DatasetName: item.dataset,
            DataName: item.data,
            Version: item.version,
            Bytes: item.bytes,
          })),
          Engine: validation.engine,
          EstimatedSeconds: validation.estimatedSeconds,
        },
      },
      200,
    );
  },
);
