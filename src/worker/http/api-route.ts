import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import { GeneralApiResponse } from "./schemas";

type ResponseEntry = Exclude<RouteConfig["responses"][string], { $ref: string }>;
/**
 * A response header as the document declares it: what it says, whether it is always sent, its value's schema.
 * A type, not an interface: OpenAPI's own header types need its implicit index signature.
 */
type HeaderObject = {
  description: string;
  required: boolean;
  schema: { type: "string" | "integer"; format?: string; pattern?: string; minimum?: number };
};
type HeadersObject = Record<string, HeaderObject | { $ref: string }>;
type HeaderSchema = HeaderObject["schema"];

function header(description: string, schema: HeaderSchema, required = true): HeaderObject {
  return { description, required, schema };
}

/** Response headers many operations send, as `components.headers` of the document (mountOpenApi registers them). */
export const RESPONSE_HEADERS = {
  RequestId: header(
    "The service's own id of this request, which a 500's message quotes and its logs carry. A client's own X-Request-Id is logged beside it, never echoed",
    { type: "string", format: "uuid" },
  ),
  RetryAfter: header("Seconds to wait before sending the request again", { type: "integer", minimum: 1 }),
  WwwAuthenticate: header(
    'The RFC 6750 challenge: Bearer realm="dqs", error="invalid_request" when no usable Authorization header was sent, else error="invalid_token"',
    { type: "string", pattern: '^Bearer realm="dqs", error="(invalid_request|invalid_token)"$' },
  ),
};

const ref = (name: keyof typeof RESPONSE_HEADERS) => ({ $ref: `#/components/headers/${name}` });

/** A header a response may carry, not every time: Set-Cookie, Preference-Applied. */
export function optionalHeader(description: string): HeaderObject {
  return header(description, { type: "string" }, false);
}

/** The `Location` of a redirect, saying where it leads. */
export function locationHeader(description: string): HeaderObject {
  return header(description, { type: "string", format: "uri-reference" });
}

/** What each status carries, unless the route declares the header itself. */
const STATUS_HEADERS: Record<string, HeadersObject> = {
  "302": { Location: locationHeader("Where the redirect leads") },
  "303": { Location: locationHeader("Where the redirect leads") },
  "401": { "WWW-Authenticate": ref("WwwAuthenticate") },
  "405": { Allow: header("The methods the path answers", { type: "string" }) },
  "409": { "Retry-After": ref("RetryAfter") },
  "429": { "Retry-After": ref("RetryAfter") },
  // A 503 for busy storage says when to retry; POST /query's own 503 (not queued) does not.
  "503": {
    "Retry-After": header("Seconds to wait; sent when the storage was busy", { type: "integer", minimum: 1 }, false),
  },
};

const envelope = (description: string): ResponseEntry => ({
  description,
  content: { "application/json": { schema: GeneralApiResponse } },
});

/** Which checks stand before the handler, besides the bearer one: each adds the responses it can give. */
interface Guards {
  /** The auth endpoints' limit by client address (middleware/rate-limit.ts). */
  clientLimit?: boolean;
  /** Whether the operation reads or writes D1, whose busy answer becomes a 503 (default true). */
  storage?: boolean;
}

/**
 * What any operation may answer besides its own responses: from the bearer
 * check (401, then 429 past the user's rate limit), the client-address limit
 * (429) and busy storage (503). A status the route declares keeps its own
 * description, followed by the common one.
 */
function commonResponses(bearer: boolean, guards: Guards): Record<string, ResponseEntry> {
  const common: Record<string, ResponseEntry> = {};
  if (bearer) {
    common["401"] = envelope(
      "Missing or invalid access token: no Authorization: Bearer header, or a token malformed, expired or revoked, or whose user has not accepted the current terms of service",
    );
    common["429"] = envelope(
      "Too many requests by this user: more in a minute than the deployment allows (1,200 by default); see Retry-After",
    );
  }
  if (guards.clientLimit)
    common["429"] = envelope(
      "Too many requests from this client address to the login and token endpoints: more in a minute than the deployment allows (120 by default); see Retry-After",
    );
  if (guards.storage ?? true)
    common["503"] = envelope("The service's storage was busy; send the request again after Retry-After");
  return common;
}

/** The route's entry and the common one for the same status, as one. */
function merge(own: ResponseEntry | undefined, common: ResponseEntry | undefined): ResponseEntry {
  if (!own) return common!;
  if (!common) return own;
  return { ...own, description: `${own.description}; or: ${common.description}` };
}

/** Every response with the headers its status carries, and X-Request-Id, which every response carries. */
function withHeaders(status: string, entry: ResponseEntry): ResponseEntry {
  const own = entry.headers as HeadersObject | undefined;
  return { ...entry, headers: { "X-Request-Id": ref("RequestId"), ...STATUS_HEADERS[status], ...own } };
}

/**
 * createRoute, with the responses and headers the service's middleware adds
 * to an operation documented too (bearer operations are those with
 * `security`; `clientLimit` and `storage` say the rest), so that each route
 * lists only the answers of its own.
 */
export function apiRoute<P extends string, R extends Omit<RouteConfig, "path"> & { path: P } & Guards>(config: R) {
  // The guards are this function's own: kept out of the document.
  const { clientLimit, storage, ...route } = config;
  const own = route.responses as Record<string, ResponseEntry>;
  const common = commonResponses((route.security?.length ?? 0) > 0, { clientLimit, storage });
  const statuses = [...new Set([...Object.keys(own), ...Object.keys(common)])].sort();
  const responses = Object.fromEntries(
    statuses.map((status) => [status, withHeaders(status, merge(own[status], common[status]))]),
  );
  return createRoute({ ...route, responses } as R);
}

/** A 302 to a download: the signed URL, and what answers there (it is outside the API, so only described here). */
export function downloadRedirect(description: string): ResponseEntry {
  return {
    description,
    headers: {
      Location: locationHeader(
        `A short-lived URL that needs no token: the service's signed /download/… URL, or an R2 presigned URL where the deployment has R2 credentials. A GET there answers the file with Content-Disposition: attachment; filename="…"; filename*=UTF-8''… (the name to save it under), Content-Length, ETag and Accept-Ranges: bytes; a Range request answers 206 with Content-Range (416 outside the file); an expired or altered link answers 403`,
      ),
    },
  };
}
