import { Hono } from "hono";
import { html } from "hono/html";
import { SignJWT } from "jose";
import { DEV_IDP_CLIENT, devIdpEnabled, requestConfig, type Config } from "../config";
import { loadKeys, SIGNING_ALG } from "../auth/keys";
import { page } from "../http/pages/layout";
import { randomToken, sha256, timingSafeEqual } from "../util/crypto";
import { isoSeconds, nowSeconds } from "../util/time";

/**
 * The built-in development identity provider: a small but real OpenID
 * Connect provider (discovery, authorization code with PKCE, token endpoint,
 * JWKS, signed ID tokens) so that local runs exercise the production login
 * path. Anyone may log in as any username, which is why it answers 404
 * unless the deployment is explicitly in development mode.
 */
export const devIdp = new Hono<{ Bindings: Env; Variables: { config: Config; issuer: string; callback: string } }>();

const CODE_TTL_SECONDS = 120;
const USERNAME_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;

devIdp.use("*", async (c, next) => {
  const config = requestConfig(c.env, c.req.url);
  if (!devIdpEnabled(config)) return c.notFound();
  c.set("config", config);
  c.set("issuer", `${config.publicUrl}/idp`);
  c.set("callback", `${config.publicUrl}/v1/auth/callback`);
  await next();
  c.header("Cache-Control", "no-store");
});

devIdp.get("/.well-known/openid-configuration", (c) => {
  const issuer = c.get("issuer");
  return c.json({
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    response_types_supported: ["code"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    scopes_supported: ["openid", "profile", "email"],
  });
});

devIdp.get("/jwks", async (c) => {
  const keys = await loadKeys(c.env, c.get("config"));
  return c.json(keys.publicJwks);
});

interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  state: string;
  nonce: string;
  code_challenge: string;
}

function authorizeParams(source: Record<string, string | undefined>, callback: string): AuthorizeParams | string {
  if (source.response_type !== "code") return "response_type must be code";
  if (source.client_id !== DEV_IDP_CLIENT.id) return "unknown client_id";
  if (source.redirect_uri !== callback) return "redirect_uri is not registered for this client";
  if (source.code_challenge_method !== "S256" || !source.code_challenge) return "PKCE with S256 is required";
  if (!source.state) return "state is required";
  return {
    client_id: source.client_id,
    redirect_uri: source.redirect_uri,
    state: source.state,
    nonce: source.nonce ?? "",
    code_challenge: source.code_challenge,
  };
}

function loginForm(params: AuthorizeParams & { response_type?: string }, problem?: string) {
  return page(
    "Sign in",
    html`<h1>Development sign-in</h1>
      <p class="muted">
        This is dqs's built-in identity provider for local development. Any username signs in as that user.
      </p>
      ${problem ? html`<p role="alert"><strong>${problem}</strong></p>` : ""}
      <form method="post" action="authorize">
        <label for="username">Username</label>
        <input id="username" type="text" name="username" autocomplete="username" autofocus required maxlength="64" />
        ${Object.entries({ ...params, response_type: "code", code_challenge_method: "S256" }).map(
          ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
        )}
        <div><button type="submit">Sign in</button></div>
      </form>`,
  );
}

function badRequestPage(problem: string) {
  return page(
    "Sign-in error",
    html`<h1>Bad sign-in request</h1>
      <p>${problem}</p>`,
  );
}

devIdp.get("/authorize", (c) => {
  const params = authorizeParams(c.req.query(), c.get("callback"));
  if (typeof params === "string") return c.html(badRequestPage(params), 400);
  return c.html(loginForm(params));
});

devIdp.post("/authorize", async (c) => {
  const form = Object.fromEntries(
    Object.entries(await c.req.parseBody()).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  );
  const params = authorizeParams(form, c.get("callback"));
  if (typeof params === "string") return c.html(badRequestPage(params), 400);
  const username = (form.username ?? "").trim();
  if (!USERNAME_PATTERN.test(username))
    return c.html(loginForm(params, "A username is 1-64 letters, digits, '.', '_', '-' or '@'."), 400);
  const code = randomToken(32);
  await c.env.DB.prepare(
    `INSERT INTO dev_idp_codes (code_hash, client_id, redirect_uri, code_challenge, nonce, username, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  )
    .bind(
      await sha256(code),
      params.client_id,
      params.redirect_uri,
      params.code_challenge,
      params.nonce,
      username,
      isoSeconds(nowSeconds() + CODE_TTL_SECONDS),
    )
    .run();
  const target = new URL(params.redirect_uri);
  target.searchParams.set("code", code);
  target.searchParams.set("state", params.state);
  return c.redirect(target.toString(), 302);
});

devIdp.post("/token", async (c) => {
  const oauthError = (error: string, description: string, status: 400 | 401 = 400) =>
    c.json({ error, error_description: description }, status);
  const form = await c.req.parseBody();
  const field = (name: string) => (typeof form[name] === "string" ? (form[name] as string) : "");
  let clientId = field("client_id");
  let clientSecret = field("client_secret");
  const basic = c.req.header("authorization")?.match(/^Basic\s+(.+)$/i);
  if (basic) {
    try {
      const [id = "", secret = ""] = atob(basic[1]!).split(":").map(decodeURIComponent);
      clientId = id;
      clientSecret = secret;
    } catch {
      // Undecodable credentials are wrong credentials (RFC 6749 §5.2), not a server error.
      return oauthError("invalid_client", "client authentication failed", 401);
    }
  }
  if (clientId !== DEV_IDP_CLIENT.id || !timingSafeEqual(clientSecret, DEV_IDP_CLIENT.secret))
    return oauthError("invalid_client", "client authentication failed", 401);
  if (field("grant_type") !== "authorization_code")
    return oauthError("unsupported_grant_type", "only authorization_code");
  const grant = await c.env.DB.prepare(
    `DELETE FROM dev_idp_codes WHERE code_hash = ? AND expires_at > ?
     RETURNING client_id AS clientId, redirect_uri AS redirectUri, code_challenge AS codeChallenge, nonce, username`,
  )
    .bind(await sha256(field("code")), isoSeconds(nowSeconds()))
    .first<{ clientId: string; redirectUri: string; codeChallenge: string; nonce: string; username: string }>();
  if (!grant || grant.clientId !== clientId || grant.redirectUri !== field("redirect_uri"))
    return oauthError("invalid_grant", "code unknown, used, expired or issued for another redirect_uri");
  if (!timingSafeEqual(await sha256(field("code_verifier")), grant.codeChallenge))
    return oauthError("invalid_grant", "PKCE verification failed");

  const keys = await loadKeys(c.env, c.get("config"));
  const now = nowSeconds();
  const idToken = await new SignJWT({
    preferred_username: grant.username,
    ...(grant.nonce ? { nonce: grant.nonce } : {}),
    ...(grant.username.includes("@") ? { email: grant.username } : {}),
  })
    .setProtectedHeader({ alg: SIGNING_ALG, kid: keys.signingKid, typ: "JWT" })
    .setIssuer(c.get("issuer"))
    .setAudience(clientId)
    .setSubject(`dev|${grant.username}`)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(keys.signingKey);
  return c.json({ access_token: randomToken(32), token_type: "Bearer", expires_in: 300, id_token: idToken });
});
