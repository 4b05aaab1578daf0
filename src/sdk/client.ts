import { DqsApiError, DqsNetworkError, DqsQueryError } from "./errors";
import { uploadBody, type UploadData, type UploadOptions } from "./multipart";
import { rowsOfPage, type ResultColumn, type Row } from "./rows";
import { tokenSetFromWire, type TokenSet } from "./tokens";
import { Transport, type Download, type TransportOptions } from "./transport";
import type {
  DataInfo,
  DataSchema,
  DatasetInfo,
  DatasetSettings,
  DataStorage,
  Me,
  Permission,
  QueryParameters,
  QueryState,
  QueryStatus,
  QueryValidation,
  ResultFormat,
  ResultRowsPage,
} from "./types";

/** Where the service is, where the tokens live, and (optionally) the fetch to use. */
export type DqsClientOptions = TransportOptions;

/** A native client's loopback login (RFC 8252): where the service sends the browser back, and the PKCE challenge. */
export interface LoopbackLogin {
  redirectUri: string;
  codeChallenge: string;
  state?: string;
}

export interface QueryOptions {
  /**
   * Values of the SQL's placeholders, bound by the service: an object for `:name`, `@name`, `$name` (keys
   * without the sigil), an array for `?` and `?NNN`. Send a 64-bit integer beyond 2^53 as a string.
   */
  parameters?: QueryParameters;
  /**
   * Seconds to wait for the query to end (default 300), every request included: a request still unanswered then
   * is abandoned, and a DqsQueryError with reason "timeout" names the query.
   */
  wait?: number;
  /** Sent as Idempotency-Key; default a new random one, so a retried submit cannot run the query twice. */
  idempotencyKey?: string;
  /** false: run the query even when an identical earlier query's result could answer it (sent as `Reuse`). */
  reuse?: boolean;
  /** Called with each status seen while waiting (for a spinner). */
  onStatus?: (status: QueryStatus) => void;
  signal?: AbortSignal;
  /** A URL the service POSTs a signed completion webhook to when the query ends (see webhookSecret()). */
  callback?: string;
}

/** A succeeded query's result (or its first rows) as rows, typed by its result schema. */
export interface ResultRows {
  queryId: string;
  columns: ResultColumn[];
  /** The rows' keys, in column order (a repeated column name gets `_2`, `_3`). */
  names: string[];
  rows: Row[];
  /** True when rows beyond `limit` were left unread. */
  more: boolean;
}

/** A finished query's result as rows, typed by its result schema. */
export interface QueryRows extends ResultRows {
  status: QueryStatus;
}

/** A finished query's result as a byte stream: the CSV, or the format asked for. */
export interface QueryStream extends Download {
  queryId: string;
  status: QueryStatus;
}

/** One page of the caller's queries. */
export interface QueryPage {
  queries: QueryStatus[];
  nextCursor: string | null;
}

const FINISHED: ReadonlySet<QueryState> = new Set(["succeeded", "failed", "cancelled"]);
const DEFAULT_WAIT_SECONDS = 300;
/** Polling starts fast and backs off: most queries end within a second, long ones need no tight loop. */
const FIRST_POLL_MS = 200;
const MAX_POLL_MS = 2000;
/**
 * The service holds a submit this long for a query that ends at once (Prefer: wait, RFC 7240); at most
 * the caller's own wait less a second, for the service may answer a little after its wait.
 */
const SUBMIT_WAIT_SECONDS = 2;
/** Rows per page when reading a whole result (the service's most): fewest round trips. */
const PAGE_ROWS = 10_000;

/**
 * A typed client of the dqs API (interface v1 and the experimental
 * endpoints). Runs wherever `fetch` does: Node ≥ 20, browsers, Workers.
 *
 * ```ts
 * const dqs = new DqsClient({ baseUrl: "https://dqs.example.com", tokens: store });
 * const { rows } = await dqs.query("SELECT * FROM alice.sales.orders LIMIT 10");
 * ```
 */
export class DqsClient {
  readonly transport: Transport;

  constructor(options: DqsClientOptions) {
    this.transport = new Transport(options);
  }

  /** The service's `{base_url}`: the origin with `/v1`. */
  get baseUrl(): string {
    return this.transport.apiBase;
  }

  // --- auth ---------------------------------------------------------------

  /** GET /auth as a URL to open in a browser; with a loopback login, the browser comes back to `redirectUri` with a code. */
  loginUrl(loopback?: LoopbackLogin): string {
    return this.transport
      .url(
        "/auth",
        {},
        loopback && {
          redirect_uri: loopback.redirectUri,
          code_challenge: loopback.codeChallenge,
          code_challenge_method: "S256",
          state: loopback.state,
        },
      )
      .toString();
  }

  /** POST /auth/code (experimental): exchanges a loopback login's one-time code for tokens, and stores them. */
  async exchangeLoginCode(exchange: {
    code: string;
    codeVerifier: string;
    redirectUri: string;
  }): Promise<{ accountName: string; tokens: TokenSet }> {
    const { body } = await this.transport.json("post", "/auth/code", {
      body: { Code: exchange.code, CodeVerifier: exchange.codeVerifier, RedirectUri: exchange.redirectUri },
      auth: false,
    });
    const tokens = tokenSetFromWire(body.Data);
    await this.transport.store.save(tokens);
    return { accountName: body.Data.AccountName, tokens };
  }

  /** POST /auth/token with a refresh token from elsewhere (the tokens page): stores the new tokens. */
  async loginWithRefreshToken(refreshToken: string): Promise<TokenSet> {
    const tokens = await this.transport.exchangeRefreshToken(refreshToken);
    await this.transport.store.save(tokens);
    return tokens;
  }

  /** POST /auth/token: renews the stored tokens now. */
  refresh(): Promise<TokenSet> {
    return this.transport.refresh();
  }

  /** The stored tokens, or null when logged out. */
  tokens(): Promise<TokenSet | null> {
    return this.transport.tokens();
  }

  /**
   * POST /auth/logout (experimental): revokes the session, then forgets the
   * tokens. A session that has already ended counts as logged out.
   */
  async logout(): Promise<void> {
    try {
      await this.transport.json("post", "/auth/logout");
    } catch (error) {
      if (!(error instanceof DqsApiError && error.code === 401)) throw error;
    }
    await this.transport.store.clear();
  }

  /** GET /me (experimental): the account and user the tokens act for, and the terms version accepted. */
  async me(): Promise<Me> {
    const { body } = await this.transport.json("get", "/me");
    return body.Data;
  }

  // --- datasets -----------------------------------------------------------

  /** GET /me/datasets: the caller's own datasets. */
  async myDatasets(): Promise<DatasetInfo[]> {
    const { body } = await this.transport.json("get", "/me/datasets");
    return body.Data.DatasetList;
  }

  /** GET /account/{AccountName}/datasets: that account's datasets the caller may see. */
  async accountDatasets(accountName: string): Promise<DatasetInfo[]> {
    const { body } = await this.transport.json("get", "/account/{AccountName}/datasets", {
      params: { AccountName: accountName },
    });
    return body.Data.DatasetList;
  }

  /** GET /dataset/{AccountName}/{DatasetName}/data: the dataset's data items. */
  async listData(accountName: string, datasetName: string): Promise<DataInfo[]> {
    const { body } = await this.transport.json("get", "/dataset/{AccountName}/{DatasetName}/data", {
      params: { AccountName: accountName, DatasetName: datasetName },
    });
    return body.Data.DataList;
  }

  /** PUT /dataset/{AccountName}/{DatasetName} (experimental): creates the dataset, or applies settings to it. */
  async createDataset(
    accountName: string,
    datasetName: string,
    settings: DatasetSettings = {},
  ): Promise<{ created: boolean; message: string }> {
    const { body, response } = await this.transport.json("put", "/dataset/{AccountName}/{DatasetName}", {
      params: { AccountName: accountName, DatasetName: datasetName },
      body: settings,
    });
    return { created: response.status === 201, message: body.Status.Message };
  }

  /** DELETE /dataset/{AccountName}/{DatasetName} (experimental): deletes the dataset and its data. */
  async deleteDataset(accountName: string, datasetName: string): Promise<string> {
    const { body } = await this.transport.json("delete", "/dataset/{AccountName}/{DatasetName}", {
      params: { AccountName: accountName, DatasetName: datasetName },
    });
    return body.Status.Message;
  }

  /** PUT /dataset/{AccountName}/{DatasetName}/grants/{Grantee} (experimental): lets another account read or write. */
  async grant(accountName: string, datasetName: string, grantee: string, permission: Permission): Promise<string> {
    const { body } = await this.transport.json("put", "/dataset/{AccountName}/{DatasetName}/grants/{Grantee}", {
      params: { AccountName: accountName, DatasetName: datasetName, Grantee: grantee },
      body: { Permission: permission },
    });
    return body.Status.Message;
  }

  /** DELETE /dataset/{AccountName}/{DatasetName}/grants/{Grantee} (experimental): takes the access back. */
  async revoke(accountName: string, datasetName: string, grantee: string): Promise<string> {
    const { body } = await this.transport.json("delete", "/dataset/{AccountName}/{DatasetName}/grants/{Grantee}", {
      params: { AccountName: accountName, DatasetName: datasetName, Grantee: grantee },
    });
    return body.Status.Message;
  }

  // --- data ---------------------------------------------------------------

  /**
   * POST /data/{AccountName}/{DatasetName}/{DataName}: uploads a CSV file
   * (gzipped or not), streaming it; returns the service's message. A 401 is
   * retried after a refresh only when the data can be read again (not a stream).
   */
  async upload(
    accountName: string,
    datasetName: string,
    dataName: string,
    data: UploadData,
    options: UploadOptions = {},
  ): Promise<string> {
    const multipart = uploadBody(data, { ...options, filename: options.filename ?? dataName });
    const headers: Record<string, string> = { "content-type": multipart.contentType, accept: "application/json" };
    if (multipart.contentLength !== null) headers["content-length"] = String(multipart.contentLength);
    const response = await this.transport.fetch({
      method: "POST",
      path: "/data/{AccountName}/{DatasetName}/{DataName}",
      params: { AccountName: accountName, DatasetName: datasetName, DataName: dataName },
      headers,
      body: multipart.body,
      replayable: multipart.replayable,
    });
    if (!response.ok) throw await DqsApiError.from(response);
    const body = (await response.json()) as { Status: { Message: string } };
    return body.Status.Message;
  }

  /** DELETE /data/{AccountName}/{DatasetName}/{DataName} (experimental): deletes a data item. */
  async deleteData(accountName: string, datasetName: string, dataName: string): Promise<string> {
    const { body } = await this.transport.json("delete", "/data/{AccountName}/{DatasetName}/{DataName}", {
      params: { AccountName: accountName, DatasetName: datasetName, DataName: dataName },
    });
    return body.Status.Message;
  }

  /** GET /data/…/rawdata: the uploaded bytes, from the signed download URL (fetched without the token). */
  download(accountName: string, datasetName: string, dataName: string): Promise<Download> {
    return this.transport.download({
      method: "GET",
      path: "/data/{AccountName}/{DatasetName}/{DataName}/rawdata",
      params: { AccountName: accountName, DatasetName: datasetName, DataName: dataName },
    });
  }

  /** GET /data/…/metadata/schema: the data item's DataSchema, parsed. */
  async dataSchema(accountName: string, datasetName: string, dataName: string): Promise<DataSchema> {
    const { body } = await this.transport.json("get", "/data/{AccountName}/{DatasetName}/{DataName}/metadata/schema", {
      params: { AccountName: accountName, DatasetName: datasetName, DataName: dataName },
    });
    return JSON.parse(body.Data.Schema) as DataSchema;
  }

  /** GET /data/…/metadata/storage (experimental): version, size, rows, and whether the query-ready images are built. */
  async dataStorage(accountName: string, datasetName: string, dataName: string): Promise<DataStorage> {
    const { body } = await this.transport.json("get", "/data/{AccountName}/{DatasetName}/{DataName}/metadata/storage", {
      params: { AccountName: accountName, DatasetName: datasetName, DataName: dataName },
    });
    return body.Data;
  }

  // --- queries ------------------------------------------------------------

  /**
   * POST /query: submits SQL; the query runs asynchronously. `waitSeconds`
   * (≤ 30) holds the answer until it ends; it then also says the query's
   * state and, once it has succeeded, carries the first page of its rows.
   * `callback` is a URL to POST the signed completion webhook to; `reuse:
   * false` runs it even when an identical earlier query's result could answer it.
   */
  async submitQuery(
    sql: string,
    options: {
      idempotencyKey?: string;
      waitSeconds?: number;
      parameters?: QueryParameters;
      callback?: string;
      reuse?: boolean;
      signal?: AbortSignal;
    } = {},
  ): Promise<{ queryId: string; message: string; state?: QueryState; firstPage?: ResultRowsPage }> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey) headers["idempotency-key"] = options.idempotencyKey;
    if (options.waitSeconds) headers.prefer = `wait=${Math.floor(options.waitSeconds)}`;
    const { body } = await this.transport.json("post", "/query", {
      body: {
        Sql: sql,
        Parameters: options.parameters,
        Callback: options.callback === undefined ? undefined : { Url: options.callback },
        Reuse: options.reuse,
      },
      headers,
      signal: options.signal,
    });
    return {
      queryId: body.Data.QueryId,
      message: body.Status.Message,
      state: body.Data.Status,
      firstPage: body.Data.FirstPage,
    };
  }

  /**
   * POST /query/validate (experimental): checks SQL (and its parameters) without running it: whether it would
   * run, its result columns, the data items it names with the bytes it would read, and the engine. A query
   * that would fail comes back with `Valid: false` and the message it would fail with.
   */
  async validate(sql: string, options: { parameters?: QueryParameters } = {}): Promise<QueryValidation> {
    const { body } = await this.transport.json("post", "/query/validate", {
      body: { Sql: sql, Parameters: options.parameters },
    });
    return body.Data;
  }

  /** GET /me/webhook-secret (experimental): the secret your completion webhooks are signed with (created on first use). */
  async webhookSecret(): Promise<string> {
    const { body } = await this.transport.json("get", "/me/webhook-secret");
    return body.Data.Secret;
  }

  /** POST /me/webhook-secret/rotate (experimental): a new secret; webhooks carry the old one's signature for a day more. */
  async rotateWebhookSecret(): Promise<string> {
    const { body } = await this.transport.json("post", "/me/webhook-secret/rotate");
    return body.Data.Secret;
  }

  /** GET /query/{QueryId}/status. */
  async queryStatus(queryId: string, options: { signal?: AbortSignal } = {}): Promise<QueryStatus> {
    const { body } = await this.transport.json("get", "/query/{QueryId}/status", {
      params: { QueryId: queryId },
      signal: options.signal,
    });
    return body.Data;
  }

  /** POST /query/{QueryId}/cancel (experimental): cancels a queued or running query. */
  async cancelQuery(queryId: string): Promise<QueryStatus> {
    const { body } = await this.transport.json("post", "/query/{QueryId}/cancel", { params: { QueryId: queryId } });
    return body.Data;
  }

  /**
   * GET /query/{QueryId}/results/rawdata: the result CSV, or with `format`
   * the result as NDJSON, Parquet or Arrow IPC (experimental), from the
   * signed download URL.
   */
  queryResult(queryId: string, format?: ResultFormat): Promise<Download> {
    return this.transport.download({
      method: "GET",
      path: "/query/{QueryId}/results/rawdata",
      params: { QueryId: queryId },
      query: { format },
    });
  }

  /** GET /query/{QueryId}/results/rows (experimental): one page of the result's rows, as the service types them. */
  async resultPage(queryId: string, options: { limit?: number; cursor?: string } = {}): Promise<ResultRowsPage> {
    const { body } = await this.transport.json("get", "/query/{QueryId}/results/rows", {
      params: { QueryId: queryId },
      query: { limit: options.limit, cursor: options.cursor },
    });
    return body.Data;
  }

  /**
   * Every page of a succeeded query's rows, each fetched when the one before
   * is taken, following NextCursor; `first`, a page already in hand (POST
   * /query's FirstPage), is yielded instead of asking for it again.
   */
  async *resultPages(
    queryId: string,
    options: { limit?: number; first?: ResultRowsPage } = {},
  ): AsyncGenerator<ResultRowsPage> {
    let page = options.first ?? (await this.resultPage(queryId, { limit: options.limit }));
    yield page;
    while (page.NextCursor !== null) {
      page = await this.resultPage(queryId, { limit: options.limit, cursor: page.NextCursor });
      yield page;
    }
  }

  /** GET /query/{QueryId}/results/metadata/schema: the result's DataSchema, parsed. */
  async queryResultSchema(queryId: string): Promise<DataSchema> {
    const { body } = await this.transport.json("get", "/query/{QueryId}/results/metadata/schema", {
      params: { QueryId: queryId },
    });
    return JSON.parse(body.Data.Schema) as DataSchema;
  }

  /** GET /me/queries (experimental): one page of the caller's queries, newest first. */
  async listQueries(options: { limit?: number; cursor?: string } = {}): Promise<QueryPage> {
    const { body } = await this.transport.json("get", "/me/queries", {
      query: { limit: options.limit, cursor: options.cursor },
    });
    return { queries: body.Data.QueryList, nextCursor: body.Data.NextCursor };
  }

  /**
   * Polls a query's status, backing off from 200 ms to 2 s, until it ends.
   * Resolves with the status of a succeeded query; throws DqsQueryError when
   * it failed or was cancelled, or when `wait` seconds pass first (a status
   * request still unanswered then is abandoned).
   */
  async waitForQuery(queryId: string, options: Omit<QueryOptions, "idempotencyKey"> = {}): Promise<QueryStatus> {
    const wait = options.wait ?? DEFAULT_WAIT_SECONDS;
    return this.pollUntil(queryId, Date.now() + wait * 1000, wait, options);
  }

  private async pollUntil(
    queryId: string,
    deadline: number,
    wait: number,
    options: Omit<QueryOptions, "idempotencyKey">,
    submitted?: QueryState,
  ): Promise<QueryStatus> {
    let delay = FIRST_POLL_MS;
    let last: QueryStatus | null = null;
    const timeout = () => {
      const state = last?.Status ?? submitted;
      const message = `Query ${queryId} is still ${state ?? "queued or running"} after ${wait} s; ask again with its id.`;
      return last ? new DqsQueryError("timeout", last, message) : new DqsQueryError("timeout", null, message, queryId);
    };
    for (;;) {
      const read = await beforeDeadline(deadline, options.signal, (signal) => this.queryStatus(queryId, { signal }));
      if (!read) throw timeout();
      const status = read.value;
      last = status;
      options.onStatus?.(status);
      if (FINISHED.has(status.Status)) return settled(status);
      const left = deadline - Date.now();
      if (left <= 0) throw timeout();
      await sleep(Math.min(delay, left), options.signal);
      delay = Math.min(delay * 1.5, MAX_POLL_MS);
    }
  }

  /**
   * Runs SQL to the end: submits it, waits with backoff, and returns the
   * result as typed rows (default), read through the pages of the rows
   * endpoint (a small result comes with the submit itself), or, with
   * `as: "stream"`, as the CSV stream (or the `format` asked for).
   */
  query(sql: string, options?: QueryOptions & { as?: "rows" }): Promise<QueryRows>;
  query(sql: string, options: QueryOptions & { as: "stream"; format?: ResultFormat }): Promise<QueryStream>;
  async query(
    sql: string,
    options: QueryOptions & { as?: "rows" | "stream"; format?: ResultFormat } = {},
  ): Promise<QueryRows | QueryStream> {
    const { status, firstPage } = await this.runQueryWithPage(sql, options);
    const queryId = status.QueryId;
    if (options.as === "stream") return { ...(await this.queryResult(queryId, options.format)), queryId, status };
    return { ...(await this.queryRows(queryId, { first: firstPage })), status };
  }

  /**
   * A succeeded query's result as rows typed by its result schema, read
   * page by page: all of it, into memory, or only the first `limit` rows (no
   * page beyond them is asked for). `first`, a page already in hand (POST
   * /query's FirstPage), is not asked for again. To hold one page at a time,
   * iterate resultPages.
   */
  async queryRows(queryId: string, options: { limit?: number; first?: ResultRowsPage } = {}): Promise<ResultRows> {
    const limit = options.limit ?? Infinity;
    let columns: ResultColumn[] = [];
    let names: string[] = [];
    const rows: Row[] = [];
    let more = false;
    for await (const page of this.resultPages(queryId, { limit: Math.min(PAGE_ROWS, limit), first: options.first })) {
      const typed = rowsOfPage(page);
      columns = typed.columns;
      names = typed.names;
      const room = limit - rows.length;
      for (const row of typed.rows.slice(0, room)) rows.push(row);
      if (rows.length < limit) continue;
      more = typed.rows.length > room || page.NextCursor !== null;
      break;
    }
    return { queryId, columns, names, rows, more };
  }

  /** Submits SQL and waits until the query has succeeded; returns its final status (see waitForQuery). */
  async runQuery(sql: string, options: QueryOptions = {}): Promise<QueryStatus> {
    return (await this.runQueryWithPage(sql, options)).status;
  }

  private async runQueryWithPage(
    sql: string,
    options: QueryOptions,
  ): Promise<{ status: QueryStatus; firstPage?: ResultRowsPage }> {
    const wait = options.wait ?? DEFAULT_WAIT_SECONDS;
    const deadline = Date.now() + wait * 1000;
    const submitted = await beforeDeadline(deadline, options.signal, (signal) =>
      this.submitQuery(sql, {
        parameters: options.parameters,
        idempotencyKey: options.idempotencyKey ?? crypto.randomUUID(),
        waitSeconds: Math.max(0, Math.min(SUBMIT_WAIT_SECONDS, Math.floor(wait) - 1)),
        callback: options.callback,
        reuse: options.reuse,
        signal,
      }),
    );
    if (!submitted)
      throw new DqsNetworkError(new URL(this.baseUrl).origin, `the submit was not answered within ${wait} s`);
    const { queryId, state, firstPage } = submitted.value;
    return { status: await this.pollUntil(queryId, deadline, wait, options, state), firstPage };
  }
}

function settled(status: QueryStatus): QueryStatus {
  if (status.Status === "succeeded") return status;
  const reason = status.Status === "failed" ? "failed" : "cancelled";
  // The service's message already says "Failed: …"; the error says it once.
  const message = status.Message.replace(/^Failed: /, "");
  throw new DqsQueryError(reason, status, `Query ${status.QueryId} ${status.Status}: ${message}`);
}

/** Marks an abort at the caller's deadline, told apart from the caller's own signal. */
const PAST_DEADLINE = new Error("past the deadline");

/**
 * Runs `call` with a signal that aborts at `deadline` (epoch ms) or with
 * `outer`: its value, or null when the deadline cut it off.
 */
async function beforeDeadline<T>(
  deadline: number,
  outer: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<{ value: T } | null> {
  outer?.throwIfAborted();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(PAST_DEADLINE), Math.max(0, deadline - Date.now()));
  const stop = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", stop, { once: true });
  try {
    return { value: await call(controller.signal) };
  } catch (error) {
    if (controller.signal.reason === PAST_DEADLINE) return null;
    throw error;
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", stop);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}
