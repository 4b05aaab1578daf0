import { z } from "@hono/zod-openapi";
import { CATALOG_COLUMNS_MOST } from "../catalog/access";
import { DATA_TYPES } from "../ingest/value-types";

// Wire shapes of the interface (section 2), PascalCase as it names them.
// Everything inside the service speaks camelCase and converts at the edge.

export const ApiResponseStatus = z
  .object({
    Code: z.number().int().openapi({ description: "Same value as the HTTP status code", example: 200 }),
    Message: z.string().openapi({ description: "What happened, for a person to read", example: "OK" }),
  })
  .openapi("ApiResponseStatus");

export const GeneralApiResponse = z.object({ Status: ApiResponseStatus }).openapi("GeneralApiResponse");

/** An envelope carrying `Data` next to `Status`. */
export function withData<T extends z.ZodTypeAny>(name: string, data: T) {
  return z.object({ Status: ApiResponseStatus, Data: data }).openapi(name);
}

export const RefreshTokenRequest = z
  .object({ RefreshToken: z.string().min(1).openapi({ description: "A valid refresh token" }) })
  .openapi("RefreshTokenRequest");

const DateTime = z.string().openapi({ format: "date-time", example: "2026-11-22T07:00:00Z" });

export const JwtResponse = withData(
  "JwtResponse",
  z.object({
    TokenType: z.literal("Bearer"),
    AccessToken: z.string().openapi({ description: "Access token (JWT, ES256), valid for one hour" }),
    AccessTokenExpiresOn: DateTime,
    RefreshToken: z.string().openapi({ description: "Refresh token, valid for 45 days, spent on use" }),
    RefreshTokenExpiresOn: DateTime,
  }),
);

export const MeResponse = withData(
  "MeResponse",
  z.object({
    AccountName: z.string().openapi({ description: "The caller's personal account" }),
    UserId: z.string().openapi({ description: "The caller's user id: the access token's subject (sub)" }),
    TermsVersion: z.string().openapi({ description: "The terms of service version the caller accepted" }),
  }),
);

export const DatasetInfo = z.object({ AccountName: z.string(), DatasetName: z.string() }).openapi("DatasetInfo");
export const DatasetListResponse = withData(
  "DatasetListResponse",
  z.object({ DatasetCount: z.number().int(), DatasetList: z.array(DatasetInfo) }),
);

export const CatalogResponse = withData(
  "CatalogResponse",
  z.object({
    DatasetCount: z.number().int(),
    DatasetList: z.array(
      z
        .object({
          AccountName: z.string(),
          DatasetName: z.string(),
          Visibility: z.enum(["private", "public"]),
          Description: z.string(),
          Access: z.enum(["owner", "write", "read"]).openapi({ description: "What the caller may do with it" }),
          Shared: z.boolean().openapi({
            description: "The caller holds a grant on it (as opposed to owning it, or seeing it because it is public)",
          }),
          DataCount: z.number().int().openapi({ description: "Data items in it" }),
          UpdatedAt: DateTime,
        })
        .openapi("CatalogEntry"),
    ),
  }),
);

export const CatalogColumnsResponse = withData(
  "CatalogColumnsResponse",
  z.object({
    ItemCount: z.number().int(),
    Truncated: z.boolean().openapi({
      description: `More items are visible than an answer lists (${CATALOG_COLUMNS_MOST}); the ones left out come last in the order`,
    }),
    ItemList: z.array(
      z
        .object({
          AccountName: z.string(),
          DatasetName: z.string(),
          DataName: z.string(),
          Columns: z.array(z.string()).openapi({ description: "The item's column names, in order" }),
        })
        .openapi("CatalogItemColumns"),
    ),
  }),
);

export const GrantListResponse = withData(
  "GrantListResponse",
  z.object({
    GrantCount: z.number().int(),
    GrantList: z.array(
      z
        .object({
          AccountName: z.string().openapi({ description: "The account the grant is for" }),
          Permission: z.enum(["read", "write"]),
          GrantedAt: DateTime,
        })
        .openapi("GrantInfo"),
    ),
  }),
);

export const DataInfo = z
  .object({
    AccountName: z.string(),
    DatasetName: z.string(),
    DataName: z.string(),
    Version: z.string().openapi({ description: "Changes with every upload of the data item" }),
    Size: z.number().int().openapi({ format: "int64", description: "Bytes as uploaded (gzip stays gzip)" }),
    RowCount: z.number().int(),
    UploadedAt: DateTime,
    QueryReady: z.boolean().openapi({
      description: "Its query-ready form (column images or table store) is built; see …/metadata/storage",
    }),
  })
  .openapi("DataInfo");
export const DataListResponse = withData(
  "DataListResponse",
  z.object({ DataCount: z.number().int(), DataList: z.array(DataInfo) }),
);

export const DataUploadRequest = z
  .object({
    Schema: z.string().optional().openapi({ description: "JSON of DataSchema (PascalCase keys)" }),
    ForceGenerateTableDefinition: z
      .enum(["true", "false"])
      .optional()
      .openapi({ description: "true: generate the TableDefinition from the file even if Schema has one" }),
    // Required: z.any() would be optional, yet an upload without the file is refused.
    Data: z
      .custom<Blob>((value) => value !== undefined)
      .openapi({
        type: "string",
        format: "binary",
        description:
          'CSV file, possibly gzipped. An unquoted empty field is NULL; a quoted "" is the empty string in a STRING column and NULL in any other. TIMESTAMP values (T or a space, optional zone) are stored in UTC as YYYY-MM-DD HH:MM:SS[.fff]',
      }),
  })
  .openapi("DataUploadRequest");

export const DataSchemaResponse = withData("DataSchemaResponse", z.object({ Schema: z.string() }));

export const DataStorageResponse = withData(
  "DataStorageResponse",
  z.object({
    Version: z.string().openapi({ description: "Changes with every upload of the data item" }),
    Size: z.number().int().openapi({ description: "Bytes as uploaded (gzip stays gzip)" }),
    RowCount: z.number().int(),
    DeliveryType: z.enum(["RAW", "GZIP"]),
    UploadedAt: DateTime,
    UploadedBy: z.string().nullable().openapi({ description: "The account that uploaded this version" }),
    QueryReady: z.boolean().openapi({
      description:
        "True once the query-ready form of this version is built (its column images, or its table store): until then queries read the CSV, or wait for a table store being built",
    }),
    ColumnImageBytes: z
      .array(z.number().int())
      .nullable()
      .openapi({ description: "Bytes of each column's image, in schema order; null until built or for a table store" }),
    TableStore: z
      .object({
        State: z.enum(["building", "ready", "failed"]),
        Rows: z.number().int().nullable(),
        Bytes: z.number().int().nullable().openapi({ description: "Bytes the store holds on disk" }),
        Message: z.string().nullable().openapi({ description: "Why the build failed" }),
      })
      .nullable()
      .openapi({
        description: `Data items with many rows (TABLE_STORE_MIN_ROWS) get a table store: a SQLite Durable Object holding their rows, where queries on them run. Null for a version without one`,
      }),
  }),
);

const ParameterValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const QueryParameters = z
  .union([z.record(z.string(), ParameterValue), z.array(ParameterValue)], {
    error:
      "Parameters must be an object (for :name, @name, $name) or an array (for ?, ?NNN) whose values are strings, numbers, booleans or null",
  })
  .openapi("QueryParameters", {
    description:
      "Values of the query's placeholders, bound by SQLite (never spliced into the text). An object binds :name, @name and $name (keys without the sigil); an array binds ? and ?NNN. A string binds as TEXT (digits stay text), an integer within ±(2^53−1) as INTEGER, any other number as REAL, a boolean as 1/0, null as NULL; send a 64-bit integer beyond 2^53 as a string (it binds as TEXT). At most 100 values, and as JSON no longer than Sql may be (MAX_SQL_LENGTH). A placeholder without a value, a value without a placeholder, or names mixed with positions answer 400 naming the placeholder.",
    example: { region: "north", min: 10 },
  });

const QueryCallback = z
  .object({
    Url: z.string().openapi({
      description:
        "Where to POST the completion webhook: https, the default port, a public host name (no IP address, loopback or private name, no user name or password); development mode also accepts http or https to a loopback host",
      example: "https://hooks.example.com/dqs",
    }),
  })
  .openapi("QueryCallback", {
    description:
      "A completion webhook (experimental): when the query succeeds, fails or is cancelled, the service POSTs its status Data (as GET /query/{QueryId}/status answers it) as JSON to Url, signed per Standard Webhooks with your secret (GET /me/webhook-secret): headers webhook-id (the QueryId), webhook-timestamp and webhook-signature. A delivery fails without a 2xx answer within 10 s (redirects are not followed) and is tried again after 10 s, 1 min, 5 min, 30 min and 2 h; the status's Callback shows the last attempt.",
  });

// Strict: a misspelt field ("Calback", "reuse") is refused rather than silently ignored.
export const SqlRequest = z
  .strictObject({
    Sql: z.string().openapi({ description: "A select query", example: "SELECT 1" }),
    // null as the query status shows them, so a status can be sent back as it is.
    Parameters: QueryParameters.nullable().optional(),
    Callback: QueryCallback.nullable().optional(),
    Reuse: z.boolean().optional().openapi({
      description:
        "Whether the query may answer from the kept result of an earlier query with the same SQL text and Parameters, on the same versions of every data item it names, when the caller may read them all (default true; the status then says Reused). false: run it anyway",
      example: false,
    }),
  })
  .openapi("SqlRequest");

const QueryState = z.enum(["queued", "running", "succeeded", "failed", "cancelled"]);

/** One page of a result's rows (experimental): GET …/results/rows, and POST /query's FirstPage. */
const ResultRows = z
  .object({
    Columns: z
      .array(z.object({ Name: z.string(), DataType: z.string().openapi({ example: "INTEGER" }) }))
      .openapi({ description: "The result's columns, in order, typed as its schema says" }),
    Rows: z.array(z.array(z.union([z.string(), z.number(), z.boolean(), z.null()]))).openapi({
      description:
        'The rows of this page, each an array in column order. INTEGER and DOUBLE values are JSON numbers, but an INTEGER beyond ±(2^53 − 1) (and an infinite DOUBLE) is a string, exact; BOOLEAN is true or false; DATE is YYYY-MM-DD and TIMESTAMP YYYY-MM-DD HH:MM:SS[.fff] in UTC (as stored); NULL is null and the empty string ""',
    }),
    RowCount: z.number().int().openapi({ description: "Rows in the whole result" }),
    NextCursor: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `cursor` for the next page; null on the last. Opaque and signed" }),
  })
  .openapi("ResultRows");

export const ResultRowsResponse = withData("ResultRowsResponse", ResultRows);

export const QueryResponse = withData(
  "QueryResponse",
  z.object({
    QueryId: z.string(),
    Status: QueryState.optional().openapi({
      description: "With Prefer: wait (experimental): the query's state when the answer was sent",
    }),
    FirstPage: ResultRows.optional().openapi({
      description:
        "With Prefer: wait (experimental), once the query has succeeded: the first page of its rows, as GET …/results/rows answers it",
    }),
  }),
);

const QueryStatusData = z
  .object({
    QueryId: z.string(),
    Status: QueryState,
    Sql: z.string(),
    // A union with null: .nullable() on a registered schema loses the null in the document.
    Parameters: z
      .union([QueryParameters, z.null()])
      .openapi({ description: "The Parameters it was submitted with; null without" }),
    CreatedAt: DateTime,
    UpdatedAt: DateTime,
    Message: z.string().openapi({ description: "What the query is doing, or why it failed" }),
    Size: z.number().int().openapi({ format: "int64", description: "Result file size in bytes; 0 until it succeeds" }),
    RowCount: z.number().int().nullable().openapi({ description: "Rows in the result" }),
    BytesLoaded: z.number().int().nullable().openapi({
      description:
        "Bytes the query loaded: the CSV it parsed (after gzip) and the column images it attached; in a table store, the other data items it brought in",
    }),
    PeakMemoryBytes: z.number().int().nullable().openapi({
      description:
        "Peak memory the query held in sql.js (WebAssembly heap, database pages, column images); null for a query run in a table store",
    }),
    Timings: z
      .object({ QueueWaitMs: z.number(), LoadMs: z.number(), ExecuteMs: z.number(), WriteMs: z.number() })
      .nullable(),
    ExpiresAt: DateTime.nullable().openapi({ description: "When the result will be deleted" }),
    Engine: z.enum(["sqljs", "store"]).nullable().openapi({
      description:
        "Which engine ran the query: sql.js (data loaded into the engine Worker) or the table store of its largest data item; null until it ran, and for a reused result",
    }),
    Reused: z.boolean().openapi({
      description:
        "True when the query did not run but answered at once from the kept result of an identical earlier query (same SQL text and Parameters, same versions of its data items): Size, RowCount and the result are that result's, BytesLoaded is 0, PeakMemoryBytes, Timings and Engine are null, and ExpiresAt is no later than that result's",
    }),
    Callback: z
      .object({
        Url: z.string(),
        LastDelivery: z
          .object({
            Attempt: z.number().int().openapi({ description: "1 for the first attempt; at most 6" }),
            At: DateTime,
            StatusCode: z.number().int().nullable().openapi({
              description: "The receiver's HTTP status; null when it gave none (unreachable, no answer within 10 s)",
            }),
            Error: z.string().nullable().openapi({ description: "Why the attempt failed; null when delivered" }),
            Delivered: z.boolean().openapi({ description: "The receiver answered 2xx" }),
            NextAttemptAt: DateTime.nullable().openapi({
              description: "When it is tried again; null when delivered or given up",
            }),
          })
          .nullable()
          .openapi({ description: "The latest attempt to deliver the completion webhook; null before the first" }),
      })
      .nullable()
      .openapi({ description: "The completion webhook it was submitted with (experimental); null without" }),
  })
  .openapi("QueryStatus");

export const QueryStatusResponse = withData("QueryStatusResponse", QueryStatusData);

export const QueryValidationResponse = withData(
  "QueryValidationResponse",
  z.object({
    Valid: z.boolean().openapi({ description: "Whether the query would run (it may still fail at a limit)" }),
    Message: z.string().openapi({
      description:
        "Why not: the message POST /v1/query would answer 400 with, or the one the query would fail with; else a summary",
    }),
    Columns: z
      .array(
        z.object({
          Name: z.string(),
          DataType: z.enum(DATA_TYPES).nullable().openapi({
            description:
              "The column's type where SQLite knows it before running (a column of a data item, BOOLEAN, DATE and TIMESTAMP ones as the result schema keeps them; a CAST, a parameter); null where only the values decide (count(*), an arithmetic expression)",
          }),
        }),
      )
      .openapi({ description: "The result's columns; empty when not valid" }),
    DataItems: z
      .array(
        z.object({
          AccountName: z.string(),
          DatasetName: z.string(),
          DataName: z.string(),
          Version: z.string(),
          Bytes: z.number().int().openapi({
            description:
              "Bytes the query would read of it from storage (catalog figures): the column images of the columns it uses, or the stored file; 0 when it runs in the item's own table store",
          }),
        }),
      )
      .openapi({ description: "The data items it names, as the caller may read them; empty until all are found" }),
    Engine: z.enum(["sqljs", "store"]).nullable().openapi({
      description: "The engine the planner would pick (a table store being built counts as store); null until planned",
    }),
    EstimatedSeconds: z.number().nullable().openapi({
      description:
        "How long it would run in that engine, estimated by running it on samples of its data items and extrapolating to their sizes; a query in a table store estimated past QUERY_TIME_LIMIT_SECONDS is refused before it starts. Null when not valid, or when the samples could not tell",
    }),
  }),
);

export const QueryListResponse = withData(
  "QueryListResponse",
  z.object({
    QueryCount: z.number().int(),
    QueryList: z.array(QueryStatusData),
    NextCursor: z.string().nullable().openapi({ description: "Pass as `cursor` for the next page; null on the last" }),
  }),
);

export const WebhookSecretResponse = withData(
  "WebhookSecretResponse",
  z.object({
    Secret: z.string().openapi({
      description:
        "The secret your completion webhooks are signed with (Standard Webhooks: whsec_ and base64 of 32 bytes); give it to your receiver's verifier",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }),
  }),
);

/** Path parameters, named as the interface names them. */
export const AccountNameParam = z.string().openapi({ param: { name: "AccountName", in: "path" }, example: "alice" });
export const DatasetNameParam = z.string().openapi({ param: { name: "DatasetName", in: "path" }, example: "sales" });
export const DataNameParam = z.string().openapi({ param: { name: "DataName", in: "path" }, example: "orders.csv" });
export const QueryIdParam = z.string().openapi({ param: { name: "QueryId", in: "path" } });

/** The envelope body for a status and message. */
export function envelope(code: number, message: string): z.infer<typeof GeneralApiResponse> {
  return { Status: { Code: code, Message: message } };
}

/** Response entries for error statuses, all the plain envelope. */
export function errorResponses<const S extends number>(...entries: [S, string][]) {
  return Object.fromEntries(
    entries.map(([status, description]) => [
      status,
      { description, content: { "application/json": { schema: GeneralApiResponse } } },
    ]),
  ) as Record<S, { description: string; content: { "application/json": { schema: typeof GeneralApiResponse } } }>;
}

/** Response entry for a success with a JSON body. */
export function jsonResponse<T extends z.ZodTypeAny>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}
