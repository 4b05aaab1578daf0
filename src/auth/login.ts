import { acceptTerms, findOrCreateUser, findUserById } from "../catalog/accounts";
import { randomToken, sha256 } from "../util/crypto";
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
import { startSession, type TokenContext, type TokenSet } from "./tokens";

/** A login must finish within ten minutes of starting. */
const LOGIN_TTL_SECONDS = 600;

export interface LoginContext {
  tokens: TokenContext;
  provider: ProviderClient;
  providerFetch: ProviderFetch;
  redirectUri: string;
}

/**
 * Begins a login: remembers state, nonce and PKCE verifier, and returns the
 * provider URL to send the browser to. The caller binds `state` to the
 * browser (a cookie), so a callback cannot be replayed into someone else's.
 */
export async function beginLogin(ctx: LoginContext): Promise<{ url: string; state: string }> {
  const metadata = await discover(ctx.provider.issuer, ctx.providerFetch);
  const state = randomToken(32);
  const nonce = randomToken(32);
  const codeVerifier = randomToken(32);
  // RFC 7636 §4.2: S256 is exactly the base64url SHA-256 of the verifier.
  const codeChallenge = await sha256(codeVerifier);
  await ctx.tokens.db
    .prepare("INSERT INTO login_flows (state_hash, nonce, code_verifier, expires_at) VALUES (?, ?, ?, ?)")
    .bind(await sha256(state), nonce, codeVerifier, isoSeconds(nowSeconds() + LOGIN_TTL_SECONDS))
    .run();
  const url = authorizationUrl(metadata, ctx.provider, { redirectUri: ctx.redirectUri, state, nonce, codeChallenge });
  return { url, state };
}

export type LoginOutcome =
  | { kind: "tokens"; tokens: TokenSet; accountName: string }
  | { kind: "terms"; state: string; accountName: string }
  | { kind: "rejected"; reason: "unknown_state" | "provider_error" | "provider_denied"; detail: string };

/** Completes a login from the provider's callback parameters. */
export async function completeLogin(
  ctx: LoginContext,
  callback: { state: string; code: string | undefined; error: string | undefined },
): Promise<LoginOutcome> {
  const flow = await takeFlow(ctx.tokens.db, callback.state, false);
  if (!flow) return { kind: "rejected", reason: "unknown_state", detail: "login state unknown, used or expired" };
  if (callback.error || !callback.code)
    return { kind: "rejected", reason: "provider_denied", detail: callback.error ?? "no code in callback" };
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
          "INSERT INTO login_flows (state_hash, nonce, code_verifier, user_id, expires_at) VALUES (?, '', '', ?, ?)",
        )
        .bind(await sha256(callback.state), user.userId, isoSeconds(nowSeconds() + LOGIN_TTL_SECONDS))
        .run();
      return { kind: "terms", state: callback.state, accountName: user.accountName };
    }
    return { kind: "tokens", tokens: await startSession(ctx.tokens, user.userId), accountName: user.accountName };
  } catch (error) {
    if (error instanceof ProviderError) return { kind: "rejected", reason: "provider_error", detail: error.message };
    throw error;
  }
}

/** Finishes a login that waited for the user to accept the current terms. */
export async function acceptTermsAndFinish(
  ctx: LoginContext,
  state: string,
): Promise<{ kind: "tokens"; tokens: TokenSet; accountName: string } | { kind: "rejected"; detail: string }> {
  const flow = await takeFlow(ctx.tokens.db, state, true);
  const user = flow?.userId ? await findUserById(ctx.tokens.db, flow.userId) : null;
  if (!user) return { kind: "rejected", detail: "login state unknown, used or expired" };
  await acceptTerms(ctx.tokens.db, user.userId, ctx.tokens.termsVersion, isoSeconds(nowSeconds()));
  return { kind: "tokens", tokens: await startSession(ctx.tokens, user.userId), accountName: user.accountName };
}

/** Removes and returns a live login flow; each state is good for one step only. */
async function takeFlow(
  db: D1Database,
  state: string,
  awaitingTerms: boolean,
): Promise<{ nonce: string; codeVerifier: string; userId: string | null } | null> {
  if (!state) return null;
  return db
    .prepare(
      `DELETE FROM login_flows WHERE state_hash = ? AND expires_at > ? AND (user_id IS NOT NULL) = ?
       RETURNING nonce, code_verifier AS codeVerifier, user_id AS userId`,
    )
    .bind(await sha256(state), isoSeconds(nowSeconds()), awaitingTerms ? 1 : 0)
    .first();
}
