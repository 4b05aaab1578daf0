import { secureHeaders } from "hono/secure-headers";
import type { AppContext } from "../context";

type ContentSecurityPolicyOptions = NonNullable<
  NonNullable<Parameters<typeof secureHeaders>[0]>["contentSecurityPolicy"]
>;

/**
 * The policy of every response. HTML pages (login, terms, the development
 * provider) load only the service's own stylesheet and run no script (the
 * tokens page runs one of its own, below); JSON and downloads load nothing. No page may be framed. There is
 * no form-action: the terms form may end in a redirect to a command line's
 * loopback address, and browsers check form-action on redirects too.
 */
const PAGE_POLICY: ContentSecurityPolicyOptions = {
  defaultSrc: ["'none'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'"],
  baseUri: ["'none'"],
  frameAncestors: ["'none'"],
};

/**
 * The API docs page: Swagger UI's script and stylesheet, both served by this
 * Worker; its icons are data: URIs; it reads the OpenAPI document and tries
 * requests on this origin and on PUBLIC_URL's.
 */
const DOCS_POLICY: ContentSecurityPolicyOptions = {
  ...PAGE_POLICY,
  scriptSrc: ["'self'"],
  imgSrc: ["'self'", "data:"],
  connectSrc: ["'self'", (c: AppContext) => new URL(c.get("config").publicUrl).origin],
};

/**
 * The routes that end a login: the tokens page's Copy buttons are a script
 * served as a static asset (src/web/static/assets); still no inline script. Their
 * other pages (terms, login ended) load none.
 */
const TOKENS_PAGE_POLICY: ContentSecurityPolicyOptions = { ...PAGE_POLICY, scriptSrc: ["'self'"] };

/**
 * The web console (/console/): its own bundled script and stylesheet (the
 * editor's styles are constructed stylesheets, which CSP does not govern),
 * charts drawn on a canvas, requests to this origin only, forms that post
 * here only. Nothing inline, nothing from another origin.
 */
const CONSOLE_POLICY: ContentSecurityPolicyOptions = {
  ...PAGE_POLICY,
  scriptSrc: ["'self'"],
  imgSrc: ["'self'", "data:"],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
};

function withPolicy(policy: ContentSecurityPolicyOptions) {
  return secureHeaders({
    contentSecurityPolicy: policy,
    referrerPolicy: "no-referrer",
    xContentTypeOptions: "nosniff",
    xFrameOptions: "DENY",
    // HSTS is the zone's decision (and `wrangler dev` is plain http).
    strictTransportSecurity: false,
    // Who may read API answers and downloads across origins is CORS's decision (app.ts).
    crossOriginResourcePolicy: false,
    // A route's own headers (the docs page's policy) win over these.
    overwrite: false,
  });
}

/** CSP, Referrer-Policy: no-referrer, X-Content-Type-Options: nosniff and the like on every response. */
export const securityHeaders = withPolicy(PAGE_POLICY);

/** The same with the docs page's policy; put on that route, it takes precedence over `securityHeaders`. */
export const docsSecurityHeaders = withPolicy(DOCS_POLICY);

/** The same with the tokens page's policy, for the routes that may end a login with that page. */
export const tokensPageSecurityHeaders = withPolicy(TOKENS_PAGE_POLICY);
/** The same with the console's policy, for everything under /console/. */
export const consoleSecurityHeaders = withPolicy(CONSOLE_POLICY);
