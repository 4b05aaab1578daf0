import { describe, expect, it } from "vitest";
import { call, ORIGIN } from "../support/http";
import { acceptTerms, formFields, loginUntilCallback, startLogin } from "../support/login";

/** A Content-Security-Policy header as directive name → its sources. */
function policy(response: Response): Map<string, string[]> {
  const header = response.headers.get("content-security-policy") ?? "";
  return new Map(
    header
      .split(";")
      .map((part) => part.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...sources]) => [name!, sources]),
  );
}

/** The URLs of a page's scripts and stylesheets. */
function loadedFiles(html: string): string[] {
  const scripts = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]*)"/g)].map((match) => match[1]!);
  const styles = [...html.matchAll(/<link\b[^>]*\brel="stylesheet"[^>]*\bhref="([^"]*)"/g)].map((match) => match[1]!);
  return [...scripts, ...styles];
}

/** A username no one has logged in with, so that the login shows the terms page. */
const newUser = () => `headers-${crypto.randomUUID().slice(0, 8)}`;

/** Every HTML page a person can see, fetched fresh. */
const PAGES: [string, () => Promise<Response>][] = [
  ["the terms page", async () => (await loginUntilCallback(newUser())).response],
  [
    "the tokens page",
    async () => {
      const { response, start } = await loginUntilCallback(newUser());
      return acceptTerms(formFields(await response.text()).state ?? "", start.cookie, "text/html");
    },
  ],
  ["the development sign-in page", async () => call((await startLogin()).authorizeUrl.toString())],
  ["the development sign-in error page", () => call("/idp/authorize?response_type=token")],
  ["the API docs", () => call("/v1/docs")],
  ["the landing page", () => call("/")],
  ["the web console", () => call("/console/")],
];

describe("HTML pages", () => {
  it.each(PAGES)("should send %s with a CSP that allows no inline script and no framing", async (page, open) => {
    const response = await open();

    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = policy(response);
    expect(csp.get("default-src")).toEqual(["'none'"]);
    expect(csp.get("frame-ancestors")).toEqual(["'none'"]);
    expect(csp.get("base-uri")).toEqual(["'none'"]);
    // Scripts only of this origin, and only where a page of the route has one: the tokens page's Copy buttons (the
    // login routes also show the terms page), Swagger UI, the web console.
    const scripts = ["the terms page", "the tokens page", "the API docs", "the web console"].includes(page);
    expect(csp.get("script-src")).toEqual(scripts ? ["'self'"] : undefined);
    expect(csp.get("style-src")).toEqual(["'self'"]);
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    await response.arrayBuffer();
  });

  it.each(PAGES)(
    "should keep %s free of inline script and style, loading files of this origin only",
    async (page, open) => {
      const html = await (await open()).text();

      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(/<script\b/.test(html)).toBe(["the tokens page", "the API docs", "the web console"].includes(page));
      expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
      const files = loadedFiles(html);
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) {
        expect(file).toMatch(/^\/[^/]/);
        const served = await call(file);
        expect(served.status, file).toBe(200);
        expect(served.headers.get("content-type")).toMatch(/^text\/(css|javascript); charset=utf-8$/);
        expect(served.headers.get("x-content-type-options")).toBe("nosniff");
        await served.arrayBuffer();
      }
    },
  );
});

describe("GET /v1/docs", () => {
  it("should load Swagger UI from this Worker, with no other origin named on the page", async () => {
    const html = await (await call("/v1/docs")).text();

    expect(loadedFiles(html)).toEqual(["/assets/swagger-ui-bundle.js", "/assets/docs.js", "/assets/swagger-ui.css"]);
    expect(html).not.toMatch(/https?:|\/\/[a-z]/i);
  });

  it("should allow scripts, styles and requests of this origin only", async () => {
    const csp = policy(await call("/v1/docs"));

    expect(csp.get("script-src")).toEqual(["'self'"]);
    expect(csp.get("style-src")).toEqual(["'self'"]);
    expect(csp.get("img-src")).toEqual(["'self'", "data:"]);
    expect(csp.get("connect-src")).toEqual(["'self'", ORIGIN]);
  });

  it("should serve Swagger UI's bundle and a script that starts it on the OpenAPI document", async () => {
    const bundle = await (await call("/assets/swagger-ui-bundle.js")).text();
    const start = await (await call("/assets/docs.js")).text();

    expect(bundle.length).toBeGreaterThan(100_000);
    expect(bundle).toContain("SwaggerUIBundle");
    expect(start).toContain('SwaggerUIBundle({ url: "/v1/openapi.json"');
    expect(start).toContain("validatorUrl: null");
  });
});

describe("the web console", () => {
  it("should run only this origin's scripts, talk only to this origin, and post forms only here", async () => {
    const csp = policy(await call("/console/"));

    expect(csp.get("script-src")).toEqual(["'self'"]);
    expect(csp.get("connect-src")).toEqual(["'self'"]);
    expect(csp.get("form-action")).toEqual(["'self'"]);
    expect(csp.get("img-src")).toEqual(["'self'", "data:"]);
  });

  it("should send its bundle with the console's policy and the usual headers", async () => {
    const html = await (await call("/console/")).text();
    expect(loadedFiles(html)).toEqual(["/console/app.js", "/console/app.css"]);

    const bundle = await call("/console/app.js");
    expect(bundle.headers.get("x-content-type-options")).toBe("nosniff");
    expect(policy(bundle).get("frame-ancestors")).toEqual(["'none'"]);
    expect((await bundle.text()).length).toBeGreaterThan(1000);
  });
});

describe("other responses", () => {
  it.each(["/v1/openapi.json", "/v1/no-such-thing", "/.well-known/jwks.json", "/assets/page.css"])(
    "should send %s with nosniff, no-referrer and a CSP that loads nothing and allows no framing",
    async (path) => {
      const response = await call(path);

      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      expect(policy(response).get("default-src")).toEqual(["'none'"]);
      expect(policy(response).get("frame-ancestors")).toEqual(["'none'"]);
      await response.arrayBuffer();
    },
  );

  it("should leave cross-origin reads to CORS (no Cross-Origin-Resource-Policy) and HSTS to the zone", async () => {
    const response = await call("/v1/openapi.json");

    expect(response.headers.get("cross-origin-resource-policy")).toBeNull();
    expect(response.headers.get("strict-transport-security")).toBeNull();
    await response.arrayBuffer();
  });
});
