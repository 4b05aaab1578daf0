import {
  DqsClient,
  MemoryTokenStore,
  type FetchLike,
  type QueryState,
  type QueryStatus,
  type TokenSet,
  type TokenStore,
} from "../../src/sdk";
import { ORIGIN, worker } from "../support/http";
import { login, type LoggedIn } from "../support/login";

/** A request the SDK sent, as the service saw it. */
export interface Sent {
  method: string;
  path: string;
  authorization: string | null;
  status: number;
}

/** A fetch that hands requests to the Worker in-process and records each one. */
export function recordingFetch(): { fetch: FetchLike; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch: FetchLike = async (request) => {
    const response = await worker(request);
    const url = new URL(request.url);
    sent.push({
      method: request.method,
      path: url.pathname,
      authorization: request.headers.get("authorization"),
      status: response.status,
    });
    return response;
  };
  return { fetch, sent };
}

/** An account name nobody else in the run uses. */
export function uniqueUser(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** The tokens of a login as the SDK keeps them. */
export function tokenSet(loggedIn: LoggedIn): TokenSet {
  return {
    tokenType: "Bearer",
    accessToken: loggedIn.accessToken,
    accessTokenExpiresAt: new Date(loggedIn.accessTokenExpiresOn),
    refreshToken: loggedIn.refreshToken,
    refreshTokenExpiresAt: new Date(loggedIn.refreshTokenExpiresOn),
  };
}

/** Logs a new user in through the real pages and returns an SDK client holding the tokens. */
export async function loggedInClient(
  prefix: string,
  options: { fetch?: FetchLike; store?: TokenStore } = {},
): Promise<{ client: DqsClient; account: string; store: TokenStore; tokens: TokenSet }> {
  const account = uniqueUser(prefix);
  const tokens = tokenSet(await login(account));
  const store = options.store ?? new MemoryTokenStore();
  await store.save(tokens);
  const client = new DqsClient({ baseUrl: ORIGIN, tokens: store, fetch: options.fetch ?? worker });
  return { client, account, store, tokens };
}

/** A query's status as the service answers it, for scripted stand-ins of the query endpoints. */
export function statusOf(state: QueryState, message = `The query is ${state}.`): QueryStatus {
  return {
    QueryId: "q1",
    Status: state,
    Sql: "SELECT 1",
    Parameters: null,
    CreatedAt: "2026-11-22T07:00:00Z",
    UpdatedAt: "2026-11-22T07:00:00Z",
    Message: message,
    Size: 0,
    RowCount: null,
    BytesLoaded: null,
    PeakMemoryBytes: null,
    Timings: null,
    ExpiresAt: null,
    Engine: null,
    Callback: null,
    Reused: false,
  };
}

/** A JSON response of `body`. */
export function json(body: unknown): Response {
  return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
}

/** Tokens that stay valid for an hour, for a client whose requests a stand-in answers. */
export function unexpiredTokens(): TokenSet {
  const far = new Date(Date.now() + 3_600_000);
  return {
    tokenType: "Bearer",
    accessToken: "t",
    accessTokenExpiresAt: far,
    refreshToken: "r",
    refreshTokenExpiresAt: far,
  };
}
