import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * An error a caller should see: its status and message go into the envelope
 * as they are, so the message must be safe to show and say what to do.
 */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const notFound = (message: string) => new ApiError(404, message);
/** 401 with the RFC 6750 challenge every bearer-protected route sends. */
export const unauthorized = (message: string, error = "invalid_token") =>
  new ApiError(401, message, { "WWW-Authenticate": `Bearer realm="dqs", error="${error}"` });
