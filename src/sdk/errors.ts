import type { QueryStatus } from "./types";

/**
 * An error answer of the service: `code` and `message` are the envelope's
 * Status.Code and Status.Message (interface §7), which equal the HTTP status
 * and say what to do. `requestId` is the X-Request-Id the service logged it
 * under; `retryAfter` the seconds of a 429's Retry-After.
 */
export class DqsApiError extends Error {
  override name = "DqsApiError";

  constructor(
    readonly code: number,
    message: string,
    readonly requestId: string | null = null,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }

  /** Builds the error from a response that is not a success, reading the envelope when there is one. */
  static async from(response: Response): Promise<DqsApiError> {
    const requestId = response.headers.get("x-request-id");
    const retry = Number(response.headers.get("retry-after"));
    const retryAfter = Number.isFinite(retry) && retry > 0 ? retry : null;
    const text = await response.text().catch(() => "");
    let message = `HTTP ${response.status} ${response.statusText}`.trim();
    let code = response.status;
    try {
      const body = JSON.parse(text) as { Status?: { Code?: unknown; Message?: unknown } };
      if (typeof body.Status?.Message === "string") message = body.Status.Message;
      if (typeof body.Status?.Code === "number") code = body.Status.Code;
    } catch {
      // Not the envelope (a proxy in between, say): keep the HTTP status line and the start of the text.
      if (text.trim() !== "") message = `${message}: ${text.trim().slice(0, 200)}`;
    }
    return new DqsApiError(code, message, requestId, retryAfter);
  }
}

/** The service could not be reached at all (refused, unresolvable, reset): no answer to read. */
export class DqsNetworkError extends Error {
  override name = "DqsNetworkError";

  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`Cannot reach the service at ${url}: ${reason}`);
  }
}

/** Thrown by a call that needs tokens when the store has none. */
export class NotLoggedInError extends DqsApiError {
  override name = "NotLoggedInError";

  constructor(message = "Not logged in: there are no tokens to call the service with.") {
    super(401, message);
  }
}

/**
 * A query that failed, was cancelled, or did not end within the time the
 * caller would wait ("timeout"). `query` is the status seen last: null only
 * for a timeout before any status could be read.
 */
export class DqsQueryError extends Error {
  override name = "DqsQueryError";
  readonly queryId: string;

  constructor(reason: "failed" | "cancelled" | "timeout", query: QueryStatus, message: string);
  constructor(reason: "timeout", query: null, message: string, queryId: string);
  constructor(
    readonly reason: "failed" | "cancelled" | "timeout",
    readonly query: QueryStatus | null,
    message: string,
    queryId?: string,
  ) {
    super(message);
    this.queryId = query?.QueryId ?? queryId ?? "";
  }
}
