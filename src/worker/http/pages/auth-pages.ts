import { html } from "hono/html";
import { page } from "./layout";

export interface ShownTokens {
  publicUrl: string;
  accountName: string;
  AccessToken: string;
  AccessTokenExpiresOn: string;
  RefreshToken: string;
  RefreshTokenExpiresOn: string;
}

/** One token: its label with a Copy button (shown by /assets/copy-buttons.js) and the token in a read-only text area. */
function tokenField(id: string, label: string, expiresOn: string, token: string, rows: number) {
  return html`<div class="token-head">
      <label for="${id}">${label} <span class="muted">(expires ${expiresOn})</span></label>
      <span class="copy-status" id="${id}-status" role="status"></span>
      <button type="button" class="copy" data-copy="${id}" aria-label="Copy the ${label.toLowerCase()}" hidden>
        Copy
      </button>
    </div>
    <textarea id="${id}" rows="${rows}" readonly spellcheck="false">${token}</textarea>`;
}

/** The page that hands a person their tokens after login. */
export function tokensPage(tokens: ShownTokens) {
  return page(
    "Your tokens",
    html`<h1>Signed in as <span id="account-name">${tokens.accountName}</span></h1>
      <p>Send the access token as <code>Authorization: Bearer &lt;access token&gt;</code>. Keep both tokens secret.</p>
      ${tokenField("access-token", "Access token", tokens.AccessTokenExpiresOn, tokens.AccessToken, 6)}
      ${tokenField("refresh-token", "Refresh token", tokens.RefreshTokenExpiresOn, tokens.RefreshToken, 2)}
      <p class="muted">
        Renew with <code>POST /v1/auth/token</code> and <code>{"RefreshToken": "…"}</code>; each refresh token works
        once. Try it: <code>curl -H "Authorization: Bearer $TOKEN" ${tokens.publicUrl}/v1/me/datasets</code>.
      </p>
      <script src="/assets/copy-buttons.js"></script>`,
  );
}

/** The page that asks a person to accept the current terms of service before tokens are issued. */
export function termsPage(options: { accountName: string; version: string; url: string | null; state: string }) {
  return page(
    "Terms of service",
    html`<h1>Terms of service</h1>
      <p>
        Welcome, <strong>${options.accountName}</strong>. Before you get tokens, please accept the dqs terms of service,
        version <strong id="terms-version">${options.version}</strong>.
      </p>
      ${options.url ? html`<p><a href="${options.url}" target="_blank" rel="noopener">Read the terms</a></p>` : ""}
      <form method="post" action="/v1/auth/terms">
        <input type="hidden" name="state" value="${options.state}" />
        <button type="submit" name="accept" value="yes">I accept</button>
      </form>
      <p class="muted">If you do not accept, close this page: no tokens are issued.</p>`,
  );
}

/**
 * What a GET of /v1/auth/terms shows (a reload, Back or a bookmark of the
 * page the terms form answered): the terms are accepted by that form's POST
 * only, so the page says where to go instead.
 */
export function termsAddressPage() {
  return page(
    "Sign-in step ended",
    html`<h1>This sign-in step has ended</h1>
      <p>
        This address answers the terms page's <strong>I accept</strong> button, once; reloading it or coming back to it
        shows this page.
      </p>
      <p>
        Open the console to use it (it signs you in again if needed), or sign in again for new API tokens (tokens are
        shown only once).
      </p>
      <p class="actions">
        <a class="button" href="/console/">Open the console</a>
        <a class="button secondary" href="/v1/auth">Sign in again for API tokens</a>
      </p>`,
  );
}

/** The page for a login that has ended: a reload or Back on the tokens page, a login from another browser, or one that expired. */
export function loginEndedPage() {
  return page(
    "Login ended",
    html`<h1>This login has ended</h1>
      <p>
        Its tokens were shown once, on the page after you signed in, and are not shown again (or the login expired, or
        it was started in another browser).
      </p>
      <p>
        Signing in to the console? Open it again: it starts a new sign-in if needed. For API tokens: if you still have
        the refresh token, renew with <code>POST /v1/auth/token</code>; otherwise sign in again.
      </p>
      <p class="actions">
        <a class="button" href="/console/">Open the console</a>
        <a class="button secondary" href="/v1/auth">Sign in again for API tokens</a>
      </p>`,
  );
}
