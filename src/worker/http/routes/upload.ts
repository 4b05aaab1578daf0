import { z } from "@hono/zod-openapi";
import { apiRoute } from "../api-route";
import { uploadDataItem } from "../../catalog/upload";
import { requestPreparation } from "../../query/prepare-item";
import type { AppContext } from "../context";
import { ApiError } from "../errors";
import { datasetFor, validateNamesForWrite } from "../guards";
import { bearerSecurity, requireAuth } from "../middleware/bearer-auth";
import { createRouter } from "../router";
import {
  AccountNameParam,
  DataNameParam,
  DatasetNameParam,
  DataUploadRequest,
  envelope,
  errorResponses,
  jsonResponse,
  withData,
} from "../schemas";
import { STORED_AS } from "../../ingest/value-types";
import { plural } from "../../util/text";

export const uploadRoute = createRouter();

const PATH = "/data/{AccountName}/{DatasetName}/{DataName}";

// The interface's GeneralApiResponse, plus Data.Warnings (additive): a program need not parse the message to notice.
const DataUploadResponse = withData(
  "DataUploadResponse",
  z.object({
    Warnings: z.array(z.string()).openapi({
      description:
        "What the uploader should know about how the file was read, each a sentence the message also carries: header names that were changed to be distinct and non-blank, a first row that looks like data taken as the header row, a file that looks like JSON or written with another delimiter. Empty when there is nothing to say",
    }),
  }),
);

// Documented from the same definition as the other routes, but served by a
// plain handler: a validator for a multipart body would read it whole, and
// this body must stream.
uploadRoute.openAPIRegistry.registerPath(
  apiRoute({
    method: "post",
    path: PATH,
    tags: ["data"],
    summary: "Upload a CSV file (optionally gzipped) as a data item",
    description:
      "Parts, in this order: Schema (optional, JSON of DataSchema), ForceGenerateTableDefinition (optional, true/false), Data (the file, exactly one). Without a TableDefinition, or with ForceGenerateTableDefinition=true, the table definition is generated from the file; otherwise every row is checked against it. Replacing an existing data item is atomic.",
    ...bearerSecurity,
    request: {
      params: z.object({ AccountName: AccountNameParam, DatasetName: DatasetNameParam, DataName: DataNameParam }),
      body: { required: true, content: { "multipart/form-data": { schema: DataUploadRequest } } },
    },
    responses: {
      200: jsonResponse(DataUploadResponse, "The file is registered"),
      ...errorResponses(
        [400, "Multiple files received, a missing or malformed part, or a file that breaks its schema"],
        [404, "Dataset does not exist or caller is not eligible to upload"],
        [413, "The file is larger than the upload limit"],
        [415, "The body is not multipart/form-data"],
      ),
    },
  }),
);

uploadRoute.post("/data/:AccountName/:DatasetName/:DataName", requireAuth, async (c: AppContext) => {
  const { AccountName, DatasetName, DataName } = c.req.param() as Record<string, string>;
  validateNamesForWrite({ account: AccountName!, dataset: DatasetName!, data: DataName! });
  const { dataset } = await datasetFor(c, AccountName!, DatasetName!, "write");
  const length = c.req.header("content-length");
  const outcome = await uploadDataItem(
    { db: c.env.DB, bucket: c.env.BUCKET, config: c.get("config") },
    c.get("principal"),
    dataset,
    DataName!,
    { body: c.req.raw.body, contentType: c.req.header("content-type"), contentLength: length ? Number(length) : null },
  );
  if (!outcome.ok) throw new ApiError(outcome.status, outcome.message);
  // The query-ready form is built in the background; until it exists, queries read the CSV.
  await requestPreparation(c.env, { datasetId: dataset.id, name: DataName! }, (send) => c.executionCtx.waitUntil(send));
  // A delimiter other than the comma is named, so a detected one is seen at once (the schema says it too).
  const delimiter = outcome.delimiter === "," ? "" : ` (delimiter ${JSON.stringify(outcome.delimiter)})`;
  const warnings = outcome.warnings.map((warning) => ` ${warning}`).join("");
  return c.json(
    {
      ...envelope(
        200,
        `Registered ${AccountName}/${DatasetName}/${DataName}: ${plural(outcome.rowCount, "row")}, ${plural(outcome.columns, "column")}${delimiter}, ${plural(outcome.size, "byte")}${outcome.deliveryType === "GZIP" ? " (gzip)" : ""}.${timestampNote(outcome.timestampColumns)}${warnings}`,
      ),
      Data: { Warnings: outcome.warnings },
    },
    200,
  );
});

// Said at once because queries compare with the stored text, not the file's (which may have a T or a zone).
function timestampNote(columns: readonly string[]): string {
  if (columns.length === 0) return "";
  const named =
    columns.length <= 3 ? columns.join(", ") : `${columns.slice(0, 3).join(", ")} and ${columns.length - 3} more`;
  return ` TIMESTAMP values (${named}) are stored in UTC as ${STORED_AS.TIMESTAMP}.`;
}
