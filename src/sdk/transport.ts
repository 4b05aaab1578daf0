import type { paths } from "./openapi-types";
import { DqsApiError, DqsNetworkError, NotLoggedInError } from "./errors";
import { MemoryTokenStore, tokenSetFromWire, type TokenSet, type TokenStore } from "./tokens";
import type { JsonRequest, Method, PathParams, PathsWith, QueryParams, SuccessJson } from "./types";

/** What the client sends requests with: `fetch`, or anything that answers a Request like it. */
export type FetchLike = (request: Request) => Promise<Response>;

export interface TransportOptions {
  /** The service's origin (`https://dqs.example.com`) or its `{base_url}` (`…/v1`). */
  baseUrl: string;
  /** Where the tokens live; a TokenSet is kept in memory. Without tokens only the login calls work. */
  tokens?: TokenStore | TokenSet | null;
  /** Replaces the global fetch (tests, proxies, a Worker's service binding). */
  fetch?: FetchLike;
  /** Renew the access token when it has less than this many seconds left (default 60). */
  refreshMarginSeconds?: number;
}

/** One request: an operation of the document, its parameters and body. */
export interface Call {
  method: string;
  path: string;
  params?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Builds the body; called again if the request is retried after a refresh. */
  body?: () => RequestBody;
  /** False when the body can be sent only once (a stream): a 401 is then not retried. */
  replayable?: boolean;
  /** Whether the call carries the access token (default true). */
  auth?: boolean;
  /** Aborts the request (and the reading of its answer). */
  signal?: AbortSignal;
}

/** What a request may send: the body types every fetch takes. */
export type RequestBody = NonNullable<RequestInit["body"]>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * The HTTP layer of the SDK: builds URLs from the document's path templates,
 * adds the access token, renews it shortly before it expires and once after
 * a 401, and turns error answers into DqsApiError.
 */
export class Transport {
  readonly apiBase: string;
  readonly store: TokenStore;
  private readonly send: FetchLike;
  private readonly marginMs: number;
  private refreshing: Promise<TokenSet> | null = null;

  constructor(options: TransportOptions) {
    const base = new URL(options.baseUrl);
    const path = base.pathname.replace(/\/+$/, "");
    this.apiBase = `${base.origin}${path.endsWith("/v1") ? path : `${path}/v1`}`;
    const tokens = options.tokens ?? null;
    this.store = tokens && "load" in tokens ? tokens : new MemoryTokenStore(tokens);
    this.send = options.fetch ?? ((request) => fetch(request));
    this.marginMs = (options.refreshMarginSeconds ?? 60) * 1000;
  }

  /** The absolute URL of a path of the document, with its parameters filled in. */
  url(path: string, params: Record<string, string> = {}, query: Call["query"] = {}): URL {
    const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = params[name];
      if (value === undefined) throw new TypeError(`missing path parameter ${name}`);
      return encodeURIComponent(value);
    });
    const url = new URL(`${this.apiBase}${filled}`);
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) url.searchParams.set(name, String(value));
    return url;
  }

  /** Sends a call and returns the response as it comes (redirects are not followed). */
  async fetch(call: Call): Promise<Response> {
    const url = this.url(call.path, call.params, call.query);
    const attempt = (token: string | null, redirect: "manual" | "follow" = "manual") => {
      const headers = new Headers(call.headers);
      if (token) headers.set("authorization", `Bearer ${token}`);
      const body = call.body?.() ?? null;
      // Node's fetch wants `duplex` for a streamed body; other runtimes ignore it.
      const init = { method: call.method, headers, body, redirect, duplex: "half", signal: call.signal } as RequestInit;
      return this.send(new Request(url, init)).catch((error: unknown) => {
        throw networkError(String(url), error);
      });
    };
    let token = call.auth === false ? null : await this.accessToken();
    let response = await attempt(token);
    if (response.status === 401 && token !== null && call.replayable !== false) {
      await response.body?.cancel();
      token = (await this.refresh(token)).accessToken;
      response = await attempt(token);
    }
    if ((response.type as string) === "opaqueredirect") {
      // Browsers hide a manual redirect's Location. Let the browser follow it: it drops
      // Authorization itself when the location is on another origin (Fetch standard, HTTP-redirect fetch).
      response = await attempt(token, "follow");
    }
    return response;
  }

  /** Calls an operation of the document and returns its typed JSON success body; errors throw DqsApiError. */
  async json<M extends Method, P extends PathsWith<M> & keyof paths>(
    method: M,
    path: P,
    options: {
      params?: PathParams<P, M>;
      query?: QueryParams<P, M>;
      body?: JsonRequest<P, M>;
      headers?: Record<string, string>;
      auth?: boolean;
      signal?: AbortSignal;
    } = {},
  ): Promise<{ body: SuccessJson<P, M>; response: Response }> {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    const json = options.body === undefined ? undefined : JSON.stringify(options.body);
    if (json !== undefined) headers["content-type"] = "application/json";
    const response = await this.fetch({
      method: method.toUpperCase(),
      path,
      params: options.params as Record<string, string> | undefined,
      query: options.query as Call["query"],
      headers,
      body: json === undefined ? undefined : () => json,
      auth: options.auth,
      signal: options.signal,
    });
    if (!response.ok) throw await DqsApiError.from(response);
    return { body: (await response.json()) as SuccessJson<P, M>, response };
  }

  /**
   * Follows a download redirect (302 to a signed URL) without the bearer
   * token: the URL carries its own authorisation, and the token must not
   * reach another host (docs/api.md).
   */
  async download(call: Call): Promise<Download> {
    const requested = this.url(call.path, call.params, call.query);
    let response = await this.fetch(call);
    if (REDIRECTS.has(response.status)) {
      const location = response.headers.get("location");
      await response.body?.cancel();
      if (!location) throw new DqsApiError(response.status, "The service redirected without a Location.");
      response = await this.send(new Request(new URL(location, requested), { method: "GET", redirect: "follow" }));
    }
    if (!response.ok) throw await DqsApiError.from(response);
    return downloadOf(response);
  }

  /** The stored tokens, or null. */
  tokens(): Promise<TokenSet | null> {
    return this.store.load();
  }

  /** A valid access token: the stored one, or a renewed one when it expires within the margin. */
  async accessToken(): Promise<string> {
    const tokens = await this.store.load();
    if (!tokens) throw new NotLoggedInError();
    if (tokens.accessTokenExpiresAt.getTime() - Date.now() > this.marginMs) return tokens.accessToken;
    return (await this.refresh(tokens.accessToken)).accessToken;
  }

  /**
   * Renews the tokens with the refresh token. One renewal at a time, inside
   * the store's lock, and only if nobody else has renewed since `stale` was
   * read: a refresh token presented twice revokes the whole session.
   */
  refresh(stale: string | null = null): Promise<TokenSet> {
    this.refreshing ??= this.renew(stale).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async renew(stale: string | null): Promise<TokenSet> {
    const work = async () => {
      const current = await this.store.load();
      if (!current) throw new NotLoggedInError();
      const renewedByOther =
        stale !== null &&
        current.accessToken !== stale &&
        current.accessTokenExpiresAt.getTime() - Date.now() > this.marginMs;
      if (renewedByOther) return current;
      const fresh = await this.exchangeRefreshToken(current.refreshToken);
      await this.store.save(fresh);
      return fresh;
    };
    return this.store.exclusive ? this.store.exclusive(work) : work();
  }

  /** POST /auth/token: spends a refresh token for new tokens (not stored). */
  async exchangeRefreshToken(refreshToken: string): Promise<TokenSet> {
    const { body } = await this.json("post", "/auth/token", { body: { RefreshToken: refreshToken }, auth: false });
    return tokenSetFromWire(body.Data);
  }
}

/** A file the service let the caller download: its bytes as a stream, with what the headers say about it. */
export interface Download {
  body: ReadableStream<Uint8Array>;
  /** Content-Length, when sent. */
  size: number | null;
  /** The file name from Content-Disposition, when sent. */
  filename: string | null;
  contentType: string | null;
  response: Response;
}

function downloadOf(response: Response): Download {
  const length = response.headers.get("content-length");
  return {
    body: response.body ?? new ReadableStream({ start: (controller) => controller.close() }),
    size: length === null ? null : Number(length),
    filename: filenameOf(response.headers.get("content-disposition")),
    contentType: response.headers.get("content-type"),
    response,
  };
}

/** The file name of a Content-Disposition header (RFC 6266), preferring the UTF-8 `filename*`. */
export function filenameOf(header: string | null): string | null {
  if (!header) return null;
  const extended = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(header)?.[1];
  if (extended) {
    try {
      return decodeURIComponent(extended.trim());
    } catch {
      // fall through to the plain parameter
    }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header);
  if (!plain) return null;
  return plain[1] !== undefined ? plain[1].replace(/\\(.)/g, "$1") : (plain[2] ?? null);
}

/** A fetch that failed without an answer, as an error naming where it went (the service's origin) and why. */
function networkError(url: string, error: unknown): unknown {
  if (!(error instanceof TypeError)) return error;
  const cause = (error as TypeError & { cause?: { code?: string; message?: string } }).cause;
  return new DqsNetworkError(new URL(url).origin, cause?.code ?? cause?.message ?? error.message);
}
