import { z } from "@hono/zod-openapi";
import { apiRoute, downloadRedirect, optionalHeader } from "../api-route";
import { loadKeys } from "../../auth/keys";
import type { HistoryCursor } from "../../query/history";
import { FINISHED } from "../../query/query-record";
import {
  beforeDeadline,
  cancelOwnQuery,
  listOwnQueries,
  submitQuery,
  waitForEnd,
  withTurn,
  type WaitedQuery,
} from "../../query/queries";
import { queryTextProblem } from "../../query/query-text";
import { resultFilename } from "../../query/result/download-name";
import { FORMAT_FILES } from "../../query/result/formats";
import { resultSchemaString } from "../../query/result-schema";
import { downloadLocation } from "../../storage/download-location";
import { RESULT_FORMATS } from "../../storage/keys";
import { checkCallbackUrl } from "../../webhooks/callback-url";
import { decodeCursor, encodeCursor } from "../cursor";
import { ApiError, badRequest, notFound } from "../errors";
import { authenticated } from "../middleware/bearer-auth";
import { ownQuery, queryNotFound, storedResult } from "../query-access";
import { queryStatusData } from "../query-wire";
import { firstPage, resultFile } from "./query-results";
import { createRouter } from "../router";
import {
  DataSchemaResponse,
  envelope,
  errorResponses,
  jsonResponse,
  QueryIdParam,
  QueryListResponse,
  QueryResponse,
  QueryStatusResponse,
  SqlRequest,
} from "../schemas";

export const queryRoutes = createRouter();

const MAX_WAIT_SECONDS = 30;
/** What reading the first page may add to a `Prefer: wait=N`: the answer comes within N s and this. */
const FIRST_PAGE_GRACE_MS = 500;
/** A refused submit (too many waiting) is worth trying again after about one query's run. */
const WAITING_RETRY_AFTER_SECONDS = 10;
const QueryParams = z.object({ QueryId: QueryIdParam });

/** `Prefer: wait=N` (RFC 7240: N whole seconds), capped; 0 when absent or malformed (`wait=1e3` is not 1). */
function preferredWait(header: string | undefined): number {
  const match = header?.match(/(?:^|[,;\s])wait\s*=\s*(\d+)\s*(?:$|[,;])/i);
  return match ? Math.min(Number(match[1]), MAX_WAIT_SECONDS) : 0;
}

queryRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/query",
    tags: ["query"],
    summary: "Submit an SQL query; it runs asynchronously",
    description: `SQLite's dialect, one read-only statement (SELECT, WITH … SELECT, VALUES). Name a data item as AccountName.DatasetName.DataName (parts bare, "quoted" or \`quoted\`, or the whole name in backticks). Placeholders take their values from Parameters (see QueryParameters). Only a malformed request, or Parameters that do not match the placeholders, is refused here; anything wrong with the SQL itself makes the query end failed with a message. Headers: Idempotency-Key (a retried submit returns the same QueryId) and Prefer: wait=N (N ≤ ${MAX_WAIT_SECONDS}: hold the response until the query ends or N seconds pass). A query identical to an earlier one whose result is still kept (same SQL text and Parameters, same versions of every data item it names, all readable by the caller, no random or date and time function) succeeds at once from that result, with Reused true in its status, unless Reuse is false.`,
    ...authenticated,
    request: {
      headers: z.object({
        "idempotency-key": z.string().min(1).max(200).optional(),
        prefer: z.string().optional(),
      }),
      body: { required: true, content: { "application/json": { schema: SqlRequest } } },
    },
    responses: {
      200: {
        ...jsonResponse(QueryResponse, "The query is queued (or, with Prefer: wait, has ended or is still going)"),
        headers: {
          "Preference-Applied": optionalHeader("With Prefer: wait=N, the wait applied: wait=N, N at most 30"),
        },
      },
      ...errorResponses(
        [
          400,
          "No JSON body, no Sql string, empty or over-long text, Parameters that do not match the placeholders, an Idempotency-Key reused with other SQL or Parameters, or a Callback.Url the webhook rules refuse (the message names the rule)",
        ],
        [413, "A body larger than Sql and Parameters at their length limit can be"],
        [409, "A submit with this Idempotency-Key is still being queued; send it again after Retry-After"],
        [415, "The body is not application/json"],
        [429, "Too many of your queries are waiting (QUERY_MAX_QUEUED_PER_USER); see Retry-After"],
        [503, "The query could not be queued"],
      ),
    },
  }),
  async (c) => {
    // Prefer: wait=N counts from the request's arrival: authentication, the submit, the wait and the first page
    // all fit in it.
    const started = c.get("receivedAt");
    const { Sql, Parameters = null, Callback, Reuse = true } = c.req.valid("json");
    const limits = c.get("config").query;
    const problem = queryTextProblem({ sql: Sql, parameters: Parameters }, limits.maxSqlLength);
    if (problem) throw badRequest(problem);
    const callback = Callback ? checkCallbackUrl(Callback.Url, c.get("config").development) : null;
    if (callback && !callback.ok) throw badRequest(callback.message);
    const headers = c.req.valid("header");
    const submitted = await submitQuery(
      c.env,
      c.get("principal"),
      {
        query: { sql: Sql, parameters: Parameters },
        idempotencyKey: headers["idempotency-key"] ?? null,
        callback: callback && { url: callback.url },
        reuse: Reuse,
      },
      limits,
      c.get("config").fairShare,
    );
    if (!submitted.ok) {
      if (submitted.reason === "idempotency_conflict")
        throw badRequest(
          "This Idempotency-Key was already used for different SQL or Parameters; use a new key for a new query.",
        );
      if (submitted.reason === "idempotency_busy")
        throw new ApiError(
          409,
          "A submit with this Idempotency-Key is still being queued; send it again in a moment to get its QueryId.",
          { "Retry-After": "1" },
        );
      if (submitted.reason === "too_many_waiting")
        throw new ApiError(
          429,
          `${submitted.waiting} of your queries are already waiting for their turn (the limit is QUERY_MAX_QUEUED_PER_USER); submit this one when some have finished, or cancel some.`,
          { "Retry-After": String(WAITING_RETRY_AFTER_SECONDS) },
        );
      throw new ApiError(
        503,
        "The query could not be queued; submit it again shortly (with the same Idempotency-Key, if you sent one).",
      );
    }
    const wait = preferredWait(headers.prefer);
    let seen: WaitedQuery = { status: submitted.status, message: null };
    if (wait > 0) {
      seen = await waitForEnd(c.env, submitted.queryId, seen.status, started + wait * 1000);
      c.header("Preference-Applied", `wait=${wait}`);
    }
    const status = seen.status;
    const message = submitted.replayed
      ? `The query with this Idempotency-Key was submitted before; its status is ${status}.`
      : submitted.reused
        ? "The query succeeded: it reused the result of an identical earlier query."
        : status === "failed" && seen.message
          ? `The query failed: ${failureReason(seen.message)}`
          : FINISHED.has(status)
            ? `The query ${status}.`
            : `The query is ${status}.`;
    // A page not read in time is left out: the rows endpoint serves it.
    const page =
      wait > 0 &&
      (await beforeDeadline(firstPage(c, submitted.queryId, status), started + wait * 1000 + FIRST_PAGE_GRACE_MS));
    const waited = wait > 0 && { Status: status, ...(page ? page.value : {}) };
    return c.json({ ...envelope(200, message), Data: { QueryId: submitted.queryId, ...waited } }, 200);
  },
);

/** A failed query's status message as the reason of a sentence: "Failed: no such column: x" → "no such column: x." */
function failureReason(message: string): string {
  const reason = message.replace(/^Failed:\s*/, "").trim();
  return /[.!?]$/.test(reason) ? reason : `${reason}.`;
}

queryRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/query/{QueryId}/status",
    tags: ["query"],
    summary: "The query's state, message, result size and timings",
    ...authenticated,
    request: { params: QueryParams },
    responses: {
      200: jsonResponse(QueryStatusResponse, "The status"),
      ...errorResponses([404, "Query does not exist or is not the caller's"]),
    },
  }),
  async (c) => {
    const record = await withTurn(c.env, await ownQuery(c, c.req.valid("param").QueryId), c.get("config").fairShare);
    return c.json({ ...envelope(200, "OK"), Data: queryStatusData(record) }, 200);
  },
);

queryRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/query/{QueryId}/results/rawdata",
    tags: ["query"],
    summary: "Download the result (CSV, or NDJSON, Parquet or Arrow)",
    description:
      'Redirects to a short-lived signed URL of the result CSV (header row, UTF-8, \\n line ends, RFC 4180 quoting, NULL as an empty field and the empty string as ""), or with `format` (experimental) of the result in that format, made from the CSV when first asked for and kept until the result expires: `ndjson` (one JSON object per row, keyed by column name, values as results/rows types them), `parquet` or `arrow` (Arrow IPC file), whose columns carry the result\'s types (INTEGER as 64-bit integers, DOUBLE as 64-bit floats, BOOLEAN, DATE, STRING and TIMESTAMP as UTF-8 text, all nullable). Columns whose names repeat are named as an upload names them (`_2`, `_3`).',
    ...authenticated,
    request: {
      params: QueryParams,
      query: z.object({
        format: z
          .enum(RESULT_FORMATS)
          .optional()
          .openapi({ description: "csv (the default), ndjson, parquet or arrow (experimental)" }),
      }),
    },
    responses: {
      302: downloadRedirect("Redirect to the download URL of the result"),
      ...errorResponses(
        [400, "The query is still running, or it failed or was cancelled (the message says which and why)"],
        [404, "Query does not exist or is not the caller's"],
        [410, "The result has expired and was deleted"],
      ),
    },
  }),
  async (c) => {
    const record = await ownQuery(c, c.req.valid("param").QueryId);
    const format = c.req.valid("query").format ?? "csv";
    const file = await resultFile(c, record, storedResult(record), format);
    const config = c.get("config");
    const keys = await loadKeys(c.env, config);
    const location = await downloadLocation(config, keys.urlSigningKeys[0]!, {
      key: file,
      filename: resultFilename(record, FORMAT_FILES[format].extension),
    });
    c.header("Cache-Control", "no-store");
    return c.redirect(location, 302);
  },
);

queryRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/query/{QueryId}/results/metadata/schema",
    tags: ["query"],
    summary: "The result's schema",
    description:
      "The result's DataSchema (column names and types as the engine reports them); 404 until the query has succeeded.",
    ...authenticated,
    request: { params: QueryParams },
    responses: {
      200: jsonResponse(DataSchemaResponse, "The result schema"),
      ...errorResponses([404, "No such query of the caller's, or no result yet"]),
    },
  }),
  async (c) => {
    const record = await ownQuery(c, c.req.valid("param").QueryId);
    if (record.status !== "succeeded" || !record.resultColumns)
      throw notFound(`Query ${record.queryId} has no result schema: it is ${record.status}.`);
    return c.json({ ...envelope(200, "OK"), Data: { Schema: resultSchemaString(record.resultColumns) } }, 200);
  },
);

queryRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/query/{QueryId}/cancel",
    tags: ["query", "experimental"],
    summary: "Cancel a queued or running query",
    ...authenticated,
    request: { params: QueryParams },
    responses: {
      200: jsonResponse(QueryStatusResponse, "The query is cancelled"),
      ...errorResponses([400, "The query has already ended"], [404, "Query does not exist or is not the caller's"]),
    },
  }),
  async (c) => {
    const { QueryId } = c.req.valid("param");
    const cancelled = await cancelOwnQuery(c.env, c.get("principal"), QueryId);
    if (!cancelled.ok) {
      if (!cancelled.endedAs) throw queryNotFound(QueryId);
      throw badRequest(`Query ${QueryId} has already ended (${cancelled.endedAs}); nothing to cancel.`);
    }
    return c.json({ ...envelope(200, "Cancelled"), Data: queryStatusData(cancelled.record) }, 200);
  },
);

const CursorSchema: z.ZodType<HistoryCursor> = z.object({ createdAt: z.string(), id: z.string() });

queryRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/me/queries",
    tags: ["user", "experimental"],
    summary: "The caller's queries, newest first",
    ...authenticated,
    request: {
      query: z.object({
        limit: z.coerce.number().int().min(1).max(100).default(20).openapi({ description: "Page size, 1-100" }),
        cursor: z.string().optional().openapi({ description: "NextCursor of the previous page" }),
      }),
    },
    responses: {
      200: jsonResponse(QueryListResponse, "One page of the caller's queries"),
      ...errorResponses([400, "Invalid limit or cursor"]),
    },
  }),
  async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const position = cursor ? decodeCursor(cursor, CursorSchema) : null;
    if (cursor && !position)
      throw badRequest("cursor is not one this service handed out; pass NextCursor from the previous page.");
    const page = await listOwnQueries(c.env, c.get("principal"), { limit, cursor: position });
    const next = page.next && encodeCursor(page.next);
    return c.json(
      {
        ...envelope(200, "OK"),
        Data: { QueryCount: page.records.length, QueryList: page.records.map(queryStatusData), NextCursor: next },
      },
      200,
    );
  },
);
