import { z } from "@hono/zod-openapi";
import { apiRoute } from "../api-route";
import { loadKeys } from "../../auth/keys";
import { findOwnQuery } from "../../query/queries";
import type { QueryRecord, QueryStatus } from "../../query/query-record";
import { signCursor, verifyCursor } from "../../query/result/cursor";
import { resultInFormat } from "../../query/result/formats";
import { PAGE_DEFAULT_ROWS, PAGE_MAX_ROWS, readPage, type StoredResult } from "../../query/result/pages";
import { MAX_ROW_CHARS } from "../../query/stored-csv";
import type { ResultFormat } from "../../storage/keys";
import type { AppContext } from "../context";
import { ApiError, badRequest } from "../errors";
import { authenticated } from "../middleware/bearer-auth";
import { ownQuery, resultExpired, storedResult } from "../query-access";
import { createRouter } from "../router";
import { envelope, errorResponses, jsonResponse, QueryIdParam, ResultRowsResponse } from "../schemas";

export const queryResultRoutes = createRouter();

/** A result with a row longer than the readers of rows and formats take: the CSV has it whole. */
function rowTooLong(record: QueryRecord, as: string): ApiError {
  return badRequest(
    `The result of query ${record.queryId} has a row longer than ${MAX_ROW_CHARS} characters, which cannot be served ${as}; download it with results/rawdata (CSV) instead.`,
  );
}

/** One page of a result as the wire carries it (ResultRows), its NextCursor signed for this query. */
async function pageData(c: AppContext, record: QueryRecord, result: StoredResult, first: number, limit: number) {
  const page = await readPage(c.env.BUCKET, result, first, limit);
  if (!page.ok) {
    if (page.reason === "gone") throw resultExpired(record);
    if (page.reason === "row too long") throw rowTooLong(record, "as rows");
    throw new ApiError(
      500,
      `The rows of query ${record.queryId} could not be read (${page.message}); download the result with results/rawdata instead.`,
    );
  }
  const keys = await loadKeys(c.env, c.get("config"));
  return {
    Columns: result.columns.map((column) => ({ Name: column.name, DataType: column.type })),
    Rows: page.rows,
    RowCount: result.rowCount,
    NextCursor: page.next === null ? null : await signCursor(keys.cursorKeys[0]!, record.queryId, page.next),
  };
}

/** POST /query's FirstPage (Prefer: wait): the first page of a succeeded query's rows; nothing if they cannot be read now. */
export async function firstPage(c: AppContext, queryId: string, status: QueryStatus) {
  if (status !== "succeeded") return {};
  const record = await findOwnQuery(c.env, c.get("principal"), queryId);
  if (!record?.resultKey) return {};
  try {
    return { FirstPage: await pageData(c, record, storedResult(record), 0, PAGE_DEFAULT_ROWS) };
  } catch (error) {
    // The submit itself went through: the rows endpoint gives the reason.
    if (error instanceof ApiError) return {};
    throw error;
  }
}

/** The key of a result in `format`, made from the CSV on its first request; 410 when the result is gone. */
export async function resultFile(c: AppContext, record: QueryRecord, result: StoredResult, format: ResultFormat) {
  const file = await resultInFormat(c.env.BUCKET, result, format);
  if (!file.ok) {
    if (file.reason === "gone") throw resultExpired(record);
    if (file.reason === "row too long") throw rowTooLong(record, `as ${format}`);
    throw new ApiError(500, `The result of query ${record.queryId} could not be made into ${format}: ${file.message}.`);
  }
  if (file.made) {
    // Retention may have deleted the result while this file was made; then nothing else would delete it.
    const now = await findOwnQuery(c.env, c.get("principal"), record.queryId);
    if (!now?.resultKey) {
      await c.env.BUCKET.delete(file.key);
      throw resultExpired(record);
    }
  }
  return file.key;
}

queryResultRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/query/{QueryId}/results/rows",
    tags: ["query", "experimental"],
    summary: "The result's rows as JSON, a page at a time",
    description: `Rows typed by the result's schema, in pages of \`limit\` rows (default ${PAGE_DEFAULT_ROWS}, at most ${PAGE_MAX_ROWS}); a page of very wide rows may hold fewer (NextCursor still says where the next starts). Each page is read from storage by byte range through the result's row index, so a page deep in a large result costs what the first one does. Answers like results/rawdata while the query is queued or running, after it failed, and after its result expired.`,
    ...authenticated,
    request: {
      params: z.object({ QueryId: QueryIdParam }),
      query: z.object({
        limit: z.coerce
          .number()
          .int()
          .min(1)
          .max(PAGE_MAX_ROWS)
          .default(PAGE_DEFAULT_ROWS)
          .openapi({ description: `Rows per page, 1-${PAGE_MAX_ROWS}` }),
        cursor: z.string().optional().openapi({ description: "NextCursor of the previous page; none for the first" }),
      }),
    },
    responses: {
      200: jsonResponse(ResultRowsResponse, "One page of the result's rows"),
      ...errorResponses(
        [
          400,
          "Invalid limit or cursor, the query is still running, or it failed or was cancelled (the message says which and why)",
        ],
        [404, "Query does not exist or is not the caller's"],
        [410, "The result has expired and was deleted"],
      ),
    },
  }),
  async (c) => {
    const record = await ownQuery(c, c.req.valid("param").QueryId);
    const { limit, cursor } = c.req.valid("query");
    const result = storedResult(record);
    let first = 0;
    if (cursor !== undefined) {
      const keys = await loadKeys(c.env, c.get("config"));
      const row = await verifyCursor(keys.cursorKeys, record.queryId, cursor);
      if (row === null || row >= result.rowCount)
        throw badRequest(
          `cursor is not one this service handed out for query ${record.queryId}; pass NextCursor from its previous page, or no cursor for the first page.`,
        );
      first = row;
    }
    return c.json({ ...envelope(200, "OK"), Data: await pageData(c, record, result, first, limit) }, 200);
  },
);
