import { env } from "cloudflare:workers";
import { call, ORIGIN, worker, type Envelope, type Fetch } from "./http";

/** The tokens a login hands out (the JwtResponse Data, camelCased), and the account they act for. */
export interface LoggedIn {
  accountName: string;
  tokenType: string;
  accessToken: string;
  accessTokenExpiresOn: string;
  refreshToken: string;
  refreshTokenExpiresOn: string;
}

/** The wire form of JwtResponse Data (interface §2.3). */
export interface JwtData {
  TokenType: string;
  AccessToken: string;
  AccessTokenExpiresOn: string;
  RefreshToken: string;
  RefreshTokenExpiresOn: string;
}

/** The user id behind a login (the id D1's rows name). */
export async function userIdOf(user: LoggedIn): Promise<string> {
  const row = await env.DB.prepare(
    "SELECT users.id AS id FROM users JOIN accounts ON accounts.id = users.account_id WHERE accounts.name = ?",
  )
    .bind(user.accountName)
    .first<{ id: string }>();
  if (!row) throw new Error(`no user has the account ${user.accountName}`);
  return row.id;
}

/** `Authorization` header for an access token. */
export function authHeader(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/**
 * Logs a user in through the real pages, in-process: GET /v1/auth, the
 * development provider's form, the callback, and the terms page when it
 * comes. Tokens come as JSON when the terms are accepted during this login,
 * else from the tokens page.
 */
export async function login(username: string, options: { via?: Fetch } = {}): Promise<LoggedIn> {
  const via = options.via ?? worker;
  const start = await startLogin(via);
  const callbackUrl = await signInAtProvider(start.authorizeUrl, username, via);
  const page = await visitCallback(callbackUrl, start.cookie, "text/html", via);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`login callback answered ${page.status}: ${html}`);
  if (!isTermsPage(html)) return tokensFromPage(html);
  const accepted = await acceptTerms(formFields(html).state ?? "", start.cookie, "application/json", via);
  if (accepted.status !== 200)
    throw new Error(`accepting the terms answered ${accepted.status}: ${await accepted.text()}`);
  const { Data } = await accepted.json<Envelope<JwtData>>();
  return { accountName: accountNameOnTermsPage(html), ...fromWire(Data) };
}

/** The start of a login: where the browser is sent, the state, and the cookie that binds the login to it. */
export interface LoginStart {
  authorizeUrl: URL;
  state: string;
  cookie: string;
}

/** GET /v1/auth, as a browser starts a login. */
export async function startLogin(via: Fetch = worker): Promise<LoginStart> {
  const response = await call("/v1/auth", {}, via);
  if (response.status !== 302) throw new Error(`GET /v1/auth answered ${response.status}: ${await response.text()}`);
  const authorizeUrl = new URL(response.headers.get("location") ?? "");
  const cookie = response.headers
    .getSetCookie()
    .map((header) => header.split(";")[0]!)
    .find((pair) => pair.startsWith("dqs_login="));
  if (!cookie) throw new Error("GET /v1/auth set no dqs_login cookie");
  return { authorizeUrl, state: authorizeUrl.searchParams.get("state") ?? "", cookie };
}

/**
 * Opens the provider's sign-in page, submits its form with a username (and
 * any hidden field changed), and returns where the provider sends the browser.
 */
export async function signInAtProvider(
  authorizeUrl: URL,
  username: string,
  via: Fetch = worker,
  changedFields: Record<string, string> = {},
): Promise<URL> {
  const page = await via(new Request(authorizeUrl, { redirect: "manual" }));
  const html = await page.text();
  if (page.status !== 200) throw new Error(`the sign-in page answered ${page.status}: ${html}`);
  const action = /<form method="post" action="([^"]*)"/.exec(html)?.[1];
  if (action === undefined) throw new Error("the sign-in page has no form");
  const form = new URLSearchParams({ ...formFields(html), ...changedFields, username });
  const response = await via(
    new Request(new URL(unescapeHtml(action), authorizeUrl), { method: "POST", body: form, redirect: "manual" }),
  );
  if (response.status !== 302) throw new Error(`signing in answered ${response.status}: ${await response.text()}`);
  return new URL(response.headers.get("location") ?? "");
}

/** The provider's redirect back to the service, with or without the login cookie. */
export function visitCallback(
  callbackUrl: URL | string,
  cookie: string | null,
  accept: string,
  via: Fetch = worker,
): Promise<Response> {
  const headers = new Headers({ accept });
  if (cookie) headers.set("cookie", cookie);
  return via(new Request(callbackUrl, { headers, redirect: "manual" }));
}

/** Submits the terms page's form, as the "I accept" button does. */
export function acceptTerms(
  state: string,
  cookie: string | null,
  accept: string,
  via: Fetch = worker,
): Promise<Response> {
  const headers = new Headers({ accept, "content-type": "application/x-www-form-urlencoded" });
  if (cookie) headers.set("cookie", cookie);
  return via(
    new Request(`${ORIGIN}/v1/auth/terms`, {
      method: "POST",
      headers,
      body: new URLSearchParams({ state, accept: "yes" }),
      redirect: "manual",
    }),
  );
}

/** Runs a login up to the page after the callback (terms or tokens) and returns it with what the browser holds. */
export async function loginUntilCallback(
  username: string,
  accept = "text/html",
  via: Fetch = worker,
): Promise<{ response: Response; start: LoginStart; callbackUrl: URL }> {
  const start = await startLogin(via);
  const callbackUrl = await signInAtProvider(start.authorizeUrl, username, via);
  return { response: await visitCallback(callbackUrl, start.cookie, accept, via), start, callbackUrl };
}

/** Whether an HTML page is the terms page. */
export function isTermsPage(html: string): boolean {
  return html.includes('action="/v1/auth/terms"');
}

/** The values of a page's form inputs that carry a value, by name. */
export function formFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"/g))
    fields[unescapeHtml(name!)] = unescapeHtml(value!);
  return fields;
}

/** The tokens shown on the tokens page. */
export function tokensFromPage(html: string): LoggedIn {
  const text = (pattern: RegExp) => {
    const found = pattern.exec(html)?.[1];
    if (found === undefined) throw new Error(`the tokens page has no match for ${pattern}`);
    return unescapeHtml(found);
  };
  const [accessExpiry, refreshExpiry] = [...html.matchAll(/\(expires ([^)]*)\)/g)].map((match) => match[1]!);
  return {
    accountName: text(/<span id="account-name">([^<]*)<\/span>/),
    tokenType: "Bearer",
    accessToken: text(/<textarea id="access-token"[^>]*>([^<]*)<\/textarea>/),
    accessTokenExpiresOn: accessExpiry ?? "",
    refreshToken: text(/<textarea id="refresh-token"[^>]*>([^<]*)<\/textarea>/),
    refreshTokenExpiresOn: refreshExpiry ?? "",
  };
}

function accountNameOnTermsPage(html: string): string {
  return unescapeHtml(/Welcome, <strong>([^<]*)<\/strong>/.exec(html)?.[1] ?? "");
}

/** JwtResponse Data in the camelCase of test code. */
export function fromWire(data: JwtData): Omit<LoggedIn, "accountName"> {
  return {
    tokenType: data.TokenType,
    accessToken: data.AccessToken,
    accessTokenExpiresOn: data.AccessTokenExpiresOn,
    refreshToken: data.RefreshToken,
    refreshTokenExpiresOn: data.RefreshTokenExpiresOn,
  };
}

function unescapeHtml(text: string): string {
  return text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}

/** What a console sign-in leaves in the browser: the session cookie (`name=value`) and where it was sent. */
export interface ConsoleSignIn {
  cookie: string;
  /** The Set-Cookie header that set it, for its attributes. */
  setCookie: string;
  location: string;
}

/**
 * Signs in to the web console through the real pages, in-process: GET
 * /console/sign-in, the development provider's form, the callback, and the
 * terms page when it comes; returns the session cookie the last step set.
 */
export async function consoleSignIn(username: string, via: Fetch = worker): Promise<ConsoleSignIn> {
  const start = await call("/console/sign-in", {}, via);
  if (start.status !== 302) throw new Error(`GET /console/sign-in answered ${start.status}: ${await start.text()}`);
  const loginCookie = start.headers
    .getSetCookie()
    .map((header) => header.split(";")[0]!)
    .find((pair) => pair.startsWith("dqs_login="));
  if (!loginCookie) throw new Error("GET /console/sign-in set no dqs_login cookie");
  const callbackUrl = await signInAtProvider(new URL(start.headers.get("location") ?? ""), username, via);
  let finish = await visitCallback(callbackUrl, loginCookie, "text/html", via);
  if (finish.status === 200) {
    const html = await finish.text();
    if (!isTermsPage(html)) throw new Error(`the console sign-in showed a page that is not the terms: ${html}`);
    finish = await acceptTerms(formFields(html).state ?? "", loginCookie, "text/html", via);
  }
  if (finish.status !== 303) throw new Error(`the console sign-in ended with ${finish.status}: ${await finish.text()}`);
  const setCookie = finish.headers.getSetCookie().find((header) => /^(__Host-)?dqs_console=/.test(header));
  if (!setCookie) throw new Error("the console sign-in set no dqs_console cookie");
  return { cookie: setCookie.split(";")[0]!, setCookie, location: finish.headers.get("location") ?? "" };
}
