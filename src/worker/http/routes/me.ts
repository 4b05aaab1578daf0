import { apiRoute } from "../api-route";
import { CATALOG_COLUMNS_MOST, listCatalog, listCatalogColumns, listVisibleDatasets } from "../../catalog/access";
import { datasetList } from "../catalog-wire";
import { authenticated } from "../middleware/bearer-auth";
import { createRouter } from "../router";
import {
  CatalogColumnsResponse,
  CatalogResponse,
  DatasetListResponse,
  envelope,
  errorResponses,
  jsonResponse,
  MeResponse,
} from "../schemas";

export const meRoutes = createRouter();

meRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/me",
    tags: ["user", "experimental"],
    summary: "Who the access token acts for",
    description: "The account, the user (the token's subject) and the terms of service version accepted.",
    ...authenticated,
    responses: {
      200: jsonResponse(MeResponse, "The caller"),
    },
  }),
  (c) => {
    const { accountName, userId, termsVersion } = c.get("principal");
    return c.json(
      { ...envelope(200, "OK"), Data: { AccountName: accountName, UserId: userId, TermsVersion: termsVersion } },
      200,
    );
  },
);

meRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/me/datasets",
    tags: ["user"],
    summary: "List the caller's own datasets",
    ...authenticated,
    responses: {
      200: jsonResponse(DatasetListResponse, "The datasets owned by the caller, by name"),
    },
  }),
  async (c) => {
    const principal = c.get("principal");
    return c.json(datasetList(await listVisibleDatasets(c.env.DB, principal, principal.accountName)), 200);
  },
);

meRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/me/catalog",
    tags: ["user", "experimental"],
    summary: "Every dataset the caller sees: its own, those shared with it, and public ones",
    description:
      "By account, then name, with the caller's access, whether a grant gives it (shared), visibility, description and the number of data items.",
    ...authenticated,
    responses: {
      200: jsonResponse(CatalogResponse, "The datasets the caller sees"),
    },
  }),
  async (c) => {
    const entries = await listCatalog(c.env.DB, c.get("principal"));
    return c.json(
      {
        ...envelope(200, "OK"),
        Data: {
          DatasetCount: entries.length,
          DatasetList: entries.map((entry) => ({
            AccountName: entry.accountName,
            DatasetName: entry.name,
            Visibility: entry.visibility,
            Description: entry.description,
            Access: entry.access,
            Shared: entry.granted,
            DataCount: entry.dataCount,
            UpdatedAt: entry.updatedAt,
          })),
        },
      },
      200,
    );
  },
);

meRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/me/catalog/columns",
    tags: ["user", "experimental"],
    summary: "The column names of every data item the caller sees, for completing SQL",
    description: `The data items of every dataset /me/catalog lists, by account, dataset, then item, each with its column names in order; at most ${CATALOG_COLUMNS_MOST} items (Truncated says when there were more). One request instead of one per item's schema.`,
    ...authenticated,
    responses: {
      200: jsonResponse(CatalogColumnsResponse, "The items and their columns"),
    },
  }),
  async (c) => {
    const { items, truncated } = await listCatalogColumns(c.env.DB, c.get("principal"), CATALOG_COLUMNS_MOST);
    return c.json(
      {
        ...envelope(200, "OK"),
        Data: {
          ItemCount: items.length,
          Truncated: truncated,
          ItemList: items.map((item) => ({
            AccountName: item.accountName,
            DatasetName: item.datasetName,
            DataName: item.dataName,
            Columns: item.columns,
          })),
        },
      },
      200,
    );
  },
);
