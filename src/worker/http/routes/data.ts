import { z } from "@hono/zod-openapi";
import { apiRoute, downloadRedirect } from "../api-route";
import { findReadableDataItem, type Viewer } from "../../catalog/access";
import { deleteDataItem, ORPHAN_GRACE_SECONDS, uploaderName } from "../../catalog/datasets";
import { loadKeys } from "../../auth/keys";
import { serializeSchema, type StoredDataSchema } from "../../ingest/data-schema";
import { parseColumnImages } from "../../query/engine/column-images";
import { parseTableStoreState } from "../../query/store/store-state";
import { downloadLocation } from "../../storage/download-location";
import { isoSeconds, nowSeconds } from "../../util/time";
import { notFound } from "../errors";
import { allowedDataset } from "../guards";
import { authenticated } from "../middleware/bearer-auth";
import { createRouter } from "../router";
import {
  AccountNameParam,
  DataNameParam,
  DataSchemaResponse,
  DatasetNameParam,
  DataStorageResponse,
  envelope,
  errorResponses,
  GeneralApiResponse,
  jsonResponse,
} from "../schemas";
import { uploadRoute } from "./upload";

export const dataRoutes = createRouter();

const DataParams = z.object({ AccountName: AccountNameParam, DatasetName: DatasetNameParam, DataName: DataNameParam });

function dataNotFound(account: string, dataset: string, data: string) {
  return notFound(`Data ${account}/${dataset}/${data} not found, or you may not access it.`);
}

/** The data item a path names, when the caller may read it; the same 404 when it does not exist or may not be seen. */
async function readableItem(db: D1Database, principal: Viewer, path: z.infer<typeof DataParams>) {
  const found = await findReadableDataItem(db, principal, path.AccountName, path.DatasetName, path.DataName);
  if (!found) throw dataNotFound(path.AccountName, path.DatasetName, path.DataName);
  return found;
}

dataRoutes.route("/", uploadRoute);

dataRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/data/{AccountName}/{DatasetName}/{DataName}/rawdata",
    tags: ["data"],
    summary: "Download the raw uploaded file",
    description:
      "Redirects to a short-lived signed URL that needs no token. The bytes are exactly those uploaded (a gzipped upload stays gzipped).",
    ...authenticated,
    request: { params: DataParams },
    responses: {
      302: downloadRedirect("Redirect to the download URL"),
      ...errorResponses([404, "Data does not exist or caller may not download it"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName, DataName } = c.req.valid("param");
    const found = await readableItem(c.env.DB, c.get("principal"), { AccountName, DatasetName, DataName });
    const config = c.get("config");
    const keys = await loadKeys(c.env, config);
    const gz = found.item.deliveryType === "GZIP" && !/\.gz$/i.test(DataName);
    const location = await downloadLocation(config, keys.urlSigningKeys[0]!, {
      key: found.item.objectKey,
      filename: gz ? `${DataName}.gz` : DataName,
    });
    c.header("Cache-Control", "no-store");
    return c.redirect(location, 302);
  },
);

dataRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/data/{AccountName}/{DatasetName}/{DataName}/metadata/schema",
    tags: ["data"],
    summary: "The data item's schema",
    description:
      "The stored DataSchema as a JSON string (PascalCase keys), with the TableDefinition (given or generated), the detected DeliveryType and Delimiter, and for BOOLEAN, DATE and TIMESTAMP columns how their values are stored (DataTypeOptions.StoredAs).",
    ...authenticated,
    request: { params: DataParams },
    responses: {
      200: jsonResponse(DataSchemaResponse, "The schema"),
      ...errorResponses([404, "Data does not exist or caller may not see it"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName, DataName } = c.req.valid("param");
    const found = await readableItem(c.env.DB, c.get("principal"), { AccountName, DatasetName, DataName });
    // Written again in the canonical form, so a schema stored before StoredAs existed says it too.
    const schema = serializeSchema(JSON.parse(found.item.schema) as StoredDataSchema);
    return c.json({ ...envelope(200, "OK"), Data: { Schema: schema } }, 200);
  },
);

dataRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/data/{AccountName}/{DatasetName}/{DataName}/metadata/storage",
    tags: ["data", "experimental"],
    summary: "How the data item is stored",
    description:
      "The current version, its size and rows, who uploaded it, and whether its query-ready column images are built yet (they are built in the background after each upload; until then queries read the CSV, which gives the same answers more slowly).",
    ...authenticated,
    request: { params: DataParams },
    responses: {
      200: jsonResponse(DataStorageResponse, "How the data item is stored"),
      ...errorResponses([404, "Data does not exist or caller may not see it"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName, DataName } = c.req.valid("param");
    const found = await readableItem(c.env.DB, c.get("principal"), { AccountName, DatasetName, DataName });
    const { item } = found;
    const columns = (JSON.parse(item.schema) as StoredDataSchema).TableDefinition.Columns.length;
    const images = parseColumnImages(item.columnImages, columns);
    const store = parseTableStoreState(item.tableStore);
    const ready = images !== null || store?.state === "ready";
    const message = ready
      ? "OK: query-ready"
      : store?.state === "building"
        ? "OK: table store being built"
        : store?.state === "failed"
          ? "OK: the table store could not be built; queries read the CSV"
          : "OK: column images not built yet";
    return c.json(
      {
        ...envelope(200, message),
        Data: {
          Version: item.version,
          Size: item.size,
          RowCount: item.rowCount,
          DeliveryType: item.deliveryType,
          UploadedAt: item.uploadedAt,
          UploadedBy: await uploaderName(c.env.DB, item.id),
          QueryReady: ready,
          ColumnImageBytes: images ? images.columns.map((column) => column.bytes) : null,
          TableStore: store && {
            State: store.state,
            Rows: store.state === "ready" ? store.rows : null,
            Bytes: store.state === "ready" ? store.bytes : null,
            Message: store.state === "failed" ? store.message : null,
          },
        },
      },
      200,
    );
  },
);

dataRoutes.openapi(
  apiRoute({
    method: "delete",
    path: "/data/{AccountName}/{DatasetName}/{DataName}",
    tags: ["data", "experimental"],
    summary: "Delete a data item",
    ...authenticated,
    request: { params: DataParams },
    responses: {
      200: jsonResponse(GeneralApiResponse, "The data item is deleted"),
      ...errorResponses([404, "Data does not exist or caller may not write to the dataset"]),
    },
  }),
  async (c) => {
    const { AccountName, DatasetName, DataName } = c.req.valid("param");
    const found = await allowedDataset(c, AccountName, DatasetName, "write");
    if (!found) throw dataNotFound(AccountName, DatasetName, DataName);
    const { dataset } = found;
    const deleted = await deleteDataItem(
      c.env.DB,
      dataset.id,
      DataName,
      isoSeconds(nowSeconds() + ORPHAN_GRACE_SECONDS),
    );
    if (!deleted) throw dataNotFound(AccountName, DatasetName, DataName);
    return c.json(envelope(200, `Data ${AccountName}/${DatasetName}/${DataName} deleted`), 200);
  },
);
