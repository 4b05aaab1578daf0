import { z } from "@hono/zod-openapi";
import { apiRoute } from "../api-route";
import {
  deleteDataset,
  findAccountId,
  ORPHAN_GRACE_SECONDS,
  grantAccess,
  listDataItems,
  listGrants,
  putDataset,
  revokeAccess,
} from "../../catalog/datasets";
import { ACCOUNT_NAME_RULE, isAccountName } from "../../catalog/names";
import { isoSeconds, nowSeconds } from "../../util/time";
import { badRequest, notFound } from "../errors";
import { datasetFor, datasetNotFound, validateNamesForWrite } from "../guards";
import { authenticated, bearerSecurity, requireAuth } from "../middleware/bearer-auth";
import type { AppContext } from "../context";
import { createRouter } from "../router";
import {
  AccountNameParam,
  DataListResponse,
  DatasetNameParam,
  envelope,
  errorResponses,
  GeneralApiResponse,
  GrantListResponse,
  jsonResponse,
} from "../schemas";

export const datasetRoutes = createRouter();

const DatasetParams = z.object({ AccountName: AccountNameParam, DatasetName: DatasetNameParam });

datasetRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/dataset/{AccountName}/{DatasetName}/data",
    tags: ["dataset"],
    summary: "List the data items of a dataset",
    ...authenticated,
    request: { params: DatasetParams },
    responses: {
      200: jsonResponse(DataListResponse, "The dataset's data items, by name"),
      ...errorResponses([404, "Dataset does not exist or caller may not see it"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName } = c.req.valid("param");
    const { dataset } = await datasetFor(c, AccountName, DatasetName, "read");
    const items = await listDataItems(c.env.DB, dataset.id);
    return c.json(
      {
        ...envelope(200, "OK"),
        Data: {
          DataCount: items.length,
          DataList: items.map((item) => ({
            AccountName: dataset.accountName,
            DatasetName: dataset.name,
            DataName: item.name,
            Version: item.version,
            Size: item.size,
            RowCount: item.rowCount,
            UploadedAt: item.uploadedAt,
            QueryReady: item.queryReady,
          })),
        },
      },
      200,
    );
  },
);

/** The body is optional here: empty means no settings; anything else must be a JSON object. */
function optionalJsonBody(text: string): unknown {
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest("Malformed JSON in request body.");
  }
}

const DatasetSettings = z
  .object({
    Visibility: z.enum(["private", "public"]).optional(),
    Description: z.string().max(2000).optional(),
  })
  .strict()
  .openapi("DatasetSettings");

// Documented from the same definition as the other routes, but served by a
// plain handler: the body is optional, and an empty body (with or without a
// JSON content type) means "no settings", which a JSON validator would refuse.
datasetRoutes.openAPIRegistry.registerPath(
  apiRoute({
    method: "put",
    path: "/dataset/{AccountName}/{DatasetName}",
    tags: ["dataset", "experimental"],
    summary: "Create a dataset (idempotent for the owner), or change its visibility or description",
    ...bearerSecurity,
    request: {
      params: DatasetParams,
      body: { required: false, content: { "application/json": { schema: DatasetSettings } } },
    },
    responses: {
      200: jsonResponse(GeneralApiResponse, "The dataset existed; the given settings are applied"),
      201: jsonResponse(GeneralApiResponse, "The dataset was created"),
      ...errorResponses(
        [400, "Invalid name, malformed JSON, or invalid settings"],
        [404, "The caller may not create datasets under that account"],
      ),
    },
  }),
);

datasetRoutes.put("/dataset/:AccountName/:DatasetName", requireAuth, async (c: AppContext) => {
  const { AccountName = "", DatasetName = "" } = c.req.param() as Record<string, string>;
  validateNamesForWrite({ account: AccountName, dataset: DatasetName });
  const principal = c.get("principal");
  if (AccountName !== principal.accountName) throw datasetNotFound(AccountName, DatasetName);
  const settings = DatasetSettings.safeParse(optionalJsonBody(await c.req.text()));
  if (!settings.success)
    throw badRequest(
      `Invalid dataset settings: ${settings.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ")}.`,
    );
  const outcome = await putDataset(
    c.env.DB,
    principal.accountId,
    DatasetName,
    { visibility: settings.data.Visibility, description: settings.data.Description },
    isoSeconds(nowSeconds()),
  );
  return outcome === "created"
    ? c.json(envelope(201, `Dataset ${AccountName}/${DatasetName} created`), 201)
    : c.json(envelope(200, `Dataset ${AccountName}/${DatasetName} exists; settings applied`), 200);
});

datasetRoutes.openapi(
  apiRoute({
    method: "delete",
    path: "/dataset/{AccountName}/{DatasetName}",
    tags: ["dataset", "experimental"],
    summary: "Delete a dataset with all its data",
    ...authenticated,
    request: { params: DatasetParams },
    responses: {
      200: jsonResponse(GeneralApiResponse, "The dataset and its data are deleted"),
      ...errorResponses([404, "Dataset does not exist or caller does not own it"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName } = c.req.valid("param");
    const { dataset } = await datasetFor(c, AccountName, DatasetName, "owner");
    await deleteDataset(c.env.DB, dataset, isoSeconds(nowSeconds() + ORPHAN_GRACE_SECONDS));
    return c.json(envelope(200, `Dataset ${AccountName}/${DatasetName} deleted`), 200);
  },
);

datasetRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/dataset/{AccountName}/{DatasetName}/grants",
    tags: ["dataset", "experimental"],
    summary: "Who holds a grant on a dataset (for its owner)",
    ...authenticated,
    request: { params: DatasetParams },
    responses: {
      200: jsonResponse(GrantListResponse, "The grants, by account name"),
      ...errorResponses([404, "Dataset does not exist or caller does not own it"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName } = c.req.valid("param");
    const { dataset } = await datasetFor(c, AccountName, DatasetName, "owner");
    const grants = await listGrants(c.env.DB, dataset.id);
    return c.json(
      {
        ...envelope(200, "OK"),
        Data: {
          GrantCount: grants.length,
          GrantList: grants.map((grant) => ({
            AccountName: grant.accountName,
            Permission: grant.permission,
            GrantedAt: grant.grantedAt,
          })),
        },
      },
      200,
    );
  },
);

const GrantParams = DatasetParams.extend({
  Grantee: z.string().openapi({ param: { name: "Grantee", in: "path" }, example: "bob" }),
});

datasetRoutes.openapi(
  apiRoute({
    method: "put",
    path: "/dataset/{AccountName}/{DatasetName}/grants/{Grantee}",
    tags: ["dataset", "experimental"],
    summary: "Give another account read or write access to a dataset",
    ...authenticated,
    request: {
      params: GrantParams,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z.strictObject({ Permission: z.enum(["read", "write"]) }).openapi("GrantRequest"),
          },
        },
      },
    },
    responses: {
      200: jsonResponse(GeneralApiResponse, "The grant is in place"),
      ...errorResponses(
        [400, "Invalid permission, or a grant to the owner"],
        [404, "Dataset or grantee account does not exist, or caller does not own the dataset"],
        [415, "The body is not application/json"],
      ),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName, Grantee } = c.req.valid("param");
    const { Permission } = c.req.valid("json");
    const { dataset } = await datasetFor(c, AccountName, DatasetName, "owner");
    if (!isAccountName(Grantee)) throw badRequest(`Grantee '${Grantee}' is invalid: use ${ACCOUNT_NAME_RULE}.`);
    const granteeId = await findAccountId(c.env.DB, Grantee);
    if (!granteeId) throw notFound(`Account ${Grantee} not found.`);
    if (granteeId === dataset.accountId)
      throw badRequest("The owner already has full access; grant to another account.");
    await grantAccess(c.env.DB, dataset.id, granteeId, Permission, isoSeconds(nowSeconds()));
    return c.json(envelope(200, `${Grantee} may now ${Permission} ${AccountName}/${DatasetName}`), 200);
  },
);

datasetRoutes.openapi(
  apiRoute({
    method: "delete",
    path: "/dataset/{AccountName}/{DatasetName}/grants/{Grantee}",
    tags: ["dataset", "experimental"],
    summary: "Take back an account's access to a dataset",
    ...authenticated,
    request: { params: GrantParams },
    responses: {
      200: jsonResponse(GeneralApiResponse, "The grant is gone"),
      ...errorResponses([404, "Dataset or grant does not exist, or caller does not own the dataset"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName, Grantee } = c.req.valid("param");
    const { dataset } = await datasetFor(c, AccountName, DatasetName, "owner");
    const granteeId = isAccountName(Grantee) ? await findAccountId(c.env.DB, Grantee) : null;
    if (!granteeId || !(await revokeAccess(c.env.DB, dataset.id, granteeId)))
      throw notFound(`${Grantee} holds no grant on ${AccountName}/${DatasetName}.`);
    return c.json(envelope(200, `${Grantee} no longer has access to ${AccountName}/${DatasetName}`), 200);
  },
);
