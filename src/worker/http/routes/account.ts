import { z } from "@hono/zod-openapi";
import { apiRoute } from "../api-route";
import { listVisibleDatasets } from "../../catalog/access";
import { ACCOUNT_NAME_RULE, isAccountName } from "../../catalog/names";
import { notFound } from "../errors";
import { datasetList } from "../catalog-wire";
import { authenticated } from "../middleware/bearer-auth";
import { createRouter } from "../router";
import { AccountNameParam, DatasetListResponse, errorResponses, jsonResponse } from "../schemas";

export const accountRoutes = createRouter();

accountRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/account/{AccountName}/datasets",
    tags: ["account"],
    summary: "List a named account's datasets that the caller may see",
    description:
      "Public datasets, datasets the caller holds a grant on, and all of them for the owner. An unknown account has no datasets to show.",
    ...authenticated,
    request: { params: z.object({ AccountName: AccountNameParam }) },
    responses: {
      200: jsonResponse(DatasetListResponse, "The account's datasets visible to the caller, by name"),
      ...errorResponses([404, "The account name breaks the naming rules"]),
    },
  }),
  async (c) => {
    const { AccountName } = c.req.valid("param");
    if (!isAccountName(AccountName))
      throw notFound(`Account '${AccountName}' cannot exist: account names are ${ACCOUNT_NAME_RULE}.`);
    return c.json(datasetList(await listVisibleDatasets(c.env.DB, c.get("principal"), AccountName)), 200);
  },
);
