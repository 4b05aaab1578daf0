import { acceptTerms, findOrCreateUser, findUserById } from "../catalog/accounts";
import { randomToken, sha256, timingSafeEqual } from "../util/crypto";
import { isoSeconds, nowSeconds } from "../util/time";
import {
  authorizationUrl,
  discover,
  exchangeCode,
  ProviderError,
  verifyIdToken,
  type ProviderClient,
  type ProviderFetch,
} from "./oidc-client";
import { startConsoleSession } from "./console-sessions";
import { startSession, type TokenContext, type TokenSet } from "./tokens";

/** A login must finish within ten minutes of starting. */
const LOGIN_TTL_SECONDS = 600;
/** A command-line client exchanges its one-time code at once; two minutes is plenty. */
const LOGIN_CODE_TTL_SECONDS = 120;
/** RFC 7636 §4.1-4.2: a verifier is 43-128 unreserved characters; its S256 challenge is 43 base64url characters. */
const CODE_VERIFIER_PATTERN = /^[A-Za-z0-9._~-]{43,128}$/;
const CODE_CHALLENGE_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/**
 * A native client (the `dqs` command line) waiting on a loopback address for
 * the outcome of a login it opened in the browser (RFC 8252 §7.3). It proves
 * with PKCE (RFC 7636) that it is the client that started the login.
 */
export interface LoopbackClient {
  redirectUri: string;
  codeChallenge: string;
  state: string | null;
}

/**
 * Checks a redirect_uri for a loopback client: plain http to 127.0.0.1, [::1]
 * or localhost with an explicit port (RFC 8252 §7.3, §8.3), no user info and
 * no fragment. Anything else could send the code off this machine.
 */
export function isLoopbackRedirectUri(value: string): boolean {
  if (value.length > 512) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (
    url.protocol === "http:" &&
    LOOPBACK_HOSTS.has(url.hostname) &&
    url.port !== "" &&
    url.username === "" &&
    url.password === "" &&
    !value.includes("#")
  );
}

/** Whether a PKCE code challenge has the shape S256 produces. */
export function isS256Challenge(value: string): boolean {
  return CODE_CHALLENGE_PATTERN.test(value);
}

export interface LoginContext {
  tokens: TokenContext;
  provider: ProviderClient;
  providerFetch: ProviderFetch;
  redirectUri: string;
}

/**
 * Who a login is for: the tokens page (a person copying tokens), a native
 * client waiting on a loopback address, or the web console, which gets a
 * cookie session and never sees a token.
 */
export type LoginClient = { kind: "page" } | { kind: "loopback"; loopback: LoopbackClient } | { kind: "console" };

/**
 * Begins a login: remembers state, nonce and PKCE verifier, and returns the
 * provider URL to send the browser to. The caller binds `state` to the
 * browser (a cookie), so a callback cannot be replayed into someone else's.
 * Throws ProviderError when the provider's discovery document cannot be read.
 */
export async function beginLogin(
  ctx: LoginContext,
  client: LoginClient = { kind: "page" },
): Promise<{ url: string; state: string }> {
  const metadata = await discover(ctx.provider.issuer, ctx.providerFetch);
  const state = randomToken(32);
  const nonce = randomToken(32);
  const codeVerifier = randomToken(32);
  // RFC 7636 §4.2: S256 is exactly the base64url SHA-256 of the verifier.
  const codeChallenge = await sha256(codeVerifier);
  await ctx.tokens.db
    .prepare(
      `INSERT INTO login_flows (state_hash, nonce, code_verifier, expires_at,
                                client_redirect_uri, client_code_challenge, client_state, console)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      await sha256(state),
      nonce,
      codeVerifier,
      isoSeconds(nowSeconds() + LOGIN_TTL_SECONDS),
      ...clientColumns(client),
    )
    .run();
  const url = authorizationUrl(metadata, ctx.provider, { redirectUri: ctx.redirectUri, state, nonce, codeChallenge });
  return { url, state };
}

/** The login_flows columns that remember the client: loopback redirect, challenge and state, and the console flag. */
function clientColumns(client: LoginClient): [string | null, string | null, string | null, number] {
  if (client.kind === "loopback")
    return [client.loopback.redirectUri, client.loopback.codeChallenge, client.loopback.state, 0];
  return [null, null, null, client.kind === "console" ? 1 : 0];
}

/**
 * Where a finished login goes: tokens for the browser, a one-time code for
 * the loopback client that started it, or a console session's cookie value.
 */
export type LoginFinish =
  | { kind: "tokens"; tokens: TokenSet; accountName: string }
  | { kind: "loopback"; location: string; accountName: string }
  | { kind: "console"; cookie: string; expiresAt: number; accountName: string };

export type LoginOutcome =
  | LoginFinish
  | { kind: "terms"; state: string; accountName: string }
  | {
      kind: "rejected";
      reason: "unknown_state" | "provider_unreachable" | "provider_error" | "provider_denied";
      detail: string;
      /** The loopback client of the login, to be told it failed; null for a browser login or an unknown state. */
      client: LoopbackClient | null;
    };

/** Completes a login from the provider's callback parameters. */
export async function completeLogin(
  ctx: LoginContext,
  callback: { state: string; code: string | undefined; error: string | undefined },
): Promise<LoginOutcome> {
  const flow = await takeFlow(ctx.tokens.db, callback.state, false);
  if (!flow)
    return {
      kind: "rejected",
      reason: "unknown_state",
      detail: "login state unknown, used or expired",
      client: null,
    };
  const loopback = flow.client.kind === "loopback" ? flow.client.loopback : null;
  if (callback.error || !callback.code)
    return {
      kind: "rejected",
      reason: "provider_denied",
      detail: callback.error ?? "no code in callback",
      client: loopback,
    };
  try {
    const metadata = await discover(ctx.provider.issuer, ctx.providerFetch);
    const idToken = await exchangeCode(
      metadata,
      ctx.provider,
      { code: callback.code, redirectUri: ctx.redirectUri, codeVerifier: flow.codeVerifier },
      ctx.providerFetch,
    );
    const identity = await verifyIdToken(metadata, ctx.provider, idToken, flow.nonce, ctx.providerFetch);
    const user = await findOrCreateUser(ctx.tokens.db, identity, isoSeconds(nowSeconds()));
    if (user.termsVersion !== ctx.tokens.termsVersion) {
      await ctx.tokens.db
        .prepare(
          `INSERT INTO login_flows (state_hash, nonce, code_verifier, user_id, expires_at,
                                    client_redirect_uri, client_code_challenge, client_state, console)
           VALUES (?, '', '', ?, ?, ?, ?, ?, ?)`,
        )
        .bind(
          await sha256(callback.state),
          user.userId,
          isoSeconds(nowSeconds() + LOGIN_TTL_SECONDS),
          ...clientColumns(flow.client),
        )
        .run();
      return { kind: "terms", state: callback.state, accountName: user.accountName };
    }
    return finishLogin(ctx, user, flow.client);
  } catch (error) {
    if (error instanceof ProviderError)
      return {
        kind: "rejected",
        reason: error.reason === "unreachable" ? "provider_unreachable" : "provider_error",
        detail: error.message,
        client: loopback,
      };
    throw error;
  }
}

/** Issues tokens to the browser, a one-time code to the loopback client, or a session to the console. */
async function finishLogin(
  ctx: LoginContext,
  user: { userId: string; accountName: string },
  loginClient: LoginClient,
): Promise<LoginFinish> {
  if (loginClient.kind === "page")
    return { kind: "tokens", tokens: await startSession(ctx.tokens, user.userId), accountName: user.accountName };
  if (loginClient.kind === "console") {
    const { token, expiresAt } = await startConsoleSession(ctx.tokens.db, user.userId);
    return { kind: "console", cookie: token, expiresAt, accountName: user.accountName };
  }
  const client = loginClient.loopback;
  const code = randomToken(32);
  const now = nowSeconds();
  await ctx.tokens.db.batch([
    // Codes are spent at once; the few never exchanged are swept here.
    ctx.tokens.db.prepare("DELETE FROM login_codes WHERE expires_at <= ?").bind(isoSeconds(now)),
    ctx.tokens.db
      .prepare(
        "INSERT INTO login_codes (code_hash, user_id, redirect_uri, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?)",
      )
      .bind(
        await sha256(code),
        user.userId,
        client.redirectUri,
        client.codeChallenge,
        isoSeconds(now + LOGIN_CODE_TTL_SECONDS),
      ),
  ]);
  return {
    kind: "loopback",
    location: loopbackLocation(client, { code }),
    accountName: user.accountName,
  };
}

/** The loopback redirect_uri with the outcome's parameters (and the client's state) added to its query. */
export function loopbackLocation(client: LoopbackClient, params: Record<string, string>): string {
  const url = new URL(client.redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (client.state !== null) url.searchParams.set("state", client.state);
  return url.href;
}

export type CodeExchange =
  | { ok: true; tokens: TokenSet; accountName: string }
  | { ok: false; reason: "unknown_code" | "mismatch" | "terms_not_accepted" };

/**
 * Exchanges a loopback client's one-time code for a new session's tokens.
 * The code is spent whatever happens next, so a wrong verifier cannot be
 * followed by a right one (RFC 6749 §10.5, RFC 7636 §4.6).
 */
export async function exchangeLoginCode(
  ctx: TokenContext,
  exchange: { code: string; codeVerifier: string; redirectUri: string },
): Promise<CodeExchange> {
  const row = await ctx.db
    .prepare(
      `DELETE FROM login_codes WHERE code_hash = ? AND expires_at > ?
       RETURNING user_id AS userId, redirect_uri AS redirectUri, code_challenge AS codeChallenge`,
    )
    .bind(await sha256(exchange.code), isoSeconds(nowSeconds()))
    .first<{ userId: string; redirectUri: string; codeChallenge: string }>();
  if (!row) return { ok: false, reason: "unknown_code" };
  const verifierOk =
    CODE_VERIFIER_PATTERN.test(exchange.codeVerifier) &&
    timingSafeEqual(await sha256(exchange.codeVerifier), row.codeChallenge);
  if (!verifierOk || exchange.redirectUri !== row.redirectUri) return { ok: false, reason: "mismatch" };
  const user = await findUserById(ctx.db, row.userId);
  if (!user || user.termsVersion !== ctx.termsVersion) return { ok: false, reason: "terms_not_accepted" };
  return { ok: true, tokens: await startSession(ctx, user.userId), accountName: user.accountName };
}

/** Finishes a login that waited for the user to accept the current terms. */
export async function acceptTermsAndFinish(
  ctx: LoginContext,
  state: string,
): Promise<LoginFinish | { kind: "rejected"; detail: string }> {
  const flow = await takeFlow(ctx.tokens.db, state, true);
  const user = flow?.userId ? await findUserById(ctx.tokens.db, flow.userId) : null;
  if (!flow || !user) return { kind: "rejected", detail: "login state unknown, used or expired" };
  await acceptTerms(ctx.tokens.db, user.userId, ctx.tokens.termsVersion, isoSeconds(nowSeconds()));
  return finishLogin(ctx, user, flow.client);
}

/** Removes and returns a live login flow; each state is good for one step only. */
async function takeFlow(
  db: D1Database,
  state: string,
  awaitingTerms: boolean,
): Promise<{ nonce: string; codeVerifier: string; userId: string | null; client: LoginClient } | null> {
  if (!state) return null;
  const row = await db
    .prepare(
      `DELETE FROM login_flows WHERE state_hash = ? AND expires_at > ? AND (user_id IS NOT NULL) = ?
       RETURNING nonce, code_verifier AS codeVerifier, user_id AS userId, client_redirect_uri AS redirectUri,
                 client_code_challenge AS codeChallenge, client_state AS clientState, console`,
    )
    .bind(await sha256(state), isoSeconds(nowSeconds()), awaitingTerms ? 1 : 0)
    .first<{
      nonce: string;
      codeVerifier: string;
      userId: string | null;
      redirectUri: string | null;
      codeChallenge: string | null;
      clientState: string | null;
      console: number;
    }>();
  if (!row) return null;
  const client: LoginClient =
    row.redirectUri && row.codeChallenge
      ? {
          kind: "loopback",
          loopback: { redirectUri: row.redirectUri, codeChallenge: row.codeChallenge, state: row.clientState },
        }
      : { kind: row.console === 1 ? "console" : "page" };
  return { nonce: row.nonce, codeVerifier: row.codeVerifier, userId: row.userId, client };
}
