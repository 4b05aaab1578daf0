import { beforeAll, describe, expect, it } from "vitest";
import { checkCallbackUrl, MAX_CALLBACK_URL_LENGTH } from "../../src/worker/webhooks/callback-url";
import { readEnvelope, workerWith, type Fetch } from "../support/http";
import { login, type LoggedIn } from "../support/login";
import { serviceWith, statusOf, submit, TestQueue } from "../support/query";

const PRODUCTION = { ENVIRONMENT: "production", OIDC_ISSUER: "https://idp.example.test", OIDC_CLIENT_SECRET: "secret" };

/** URLs a production deployment refuses, each with the words of the rule its message must name. */
const REFUSED: [url: string, rule: RegExp][] = [
  ["http://hooks.example.com/dqs", /must use https, not http\./],
  ["ftp://hooks.example.com/dqs", /must use https, not ftp\./],
  ["javascript:alert(1)", /must use https, not javascript\./],
  ["file:///etc/passwd", /must use https, not file\./],
  ["hooks.example.com/dqs", /is not an absolute URL/],
  ["/relative/path", /is not an absolute URL/],
  ["https://", /is not an absolute URL/],
  ["https://hooks.example.com:8443/dqs", /names port 8443; only the default https port \(443\)/],
  ["https://hooks.example.com:80/dqs", /names port 80;/],
  ["https://user:pw@hooks.example.com/dqs", /carries a user name or password/],
  ["https://hooks.example.com@127.0.0.1/dqs", /carries a user name or password/],
  // A second trailing dot (or a leading or doubled one) would otherwise hide the name from every rule below.
  ["https://localhost../dqs", /names localhost\.\., which has an empty label/],
  ["https://foo.local../dqs", /names foo\.local\.\., which has an empty label/],
  ["https://metadata.google.internal../dqs", /which has an empty label/],
  ["https://1.2.3.4../dqs", /which has an empty label/],
  ["https://foo.internal%2e%2e/dqs", /names foo\.internal\.\., which has an empty label/],
  ["https://.example.com/dqs", /which has an empty label/],
  ["https://a..b.com/dqs", /which has an empty label/],
  ["https://hooks.alt/dqs", /under \.alt, which is not a public name/],
  // Loopback, in every spelling the URL parser reads as one.
  ["https://localhost/dqs", /names localhost, a loopback host; only development mode/],
  ["https://LOCALHOST./dqs", /names localhost\., a loopback host/],
  ["https://api.localhost/dqs", /names api\.localhost, a loopback host/],
  ["https://%6c%6fcalhost/dqs", /names localhost, a loopback host/],
  ["https://127.0.0.1/dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://127.0.0.1./dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://127.1/dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://0x7f.1/dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://0x7f000001/dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://2130706433/dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://017700000001/dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://127.255.255.254/dqs", /names 127\.255\.255\.254, a loopback host/],
  ["https://１２７.０.０.１/dqs", /names 127\.0\.0\.1, a loopback host/],
  ["https://[::1]/dqs", /names \[::1\], a loopback host/],
  ["https://[0:0:0:0:0:0:0:1]/dqs", /names \[::1\], a loopback host/],
  // Every other IP address: private ranges, link-local (cloud metadata), mapped, and public ones too.
  ["https://[::ffff:127.0.0.1]/dqs", /names the IP address \[::ffff:7f00:1\]; IP addresses are not accepted/],
  ["https://[::ffff:10.0.0.1]/dqs", /names the IP address \[::ffff:a00:1\]/],
  ["https://[::]/dqs", /names the IP address \[::\]/],
  ["https://[fd00::1]/dqs", /names the IP address \[fd00::1\]/],
  ["https://[fe80::1]/dqs", /names the IP address \[fe80::1\]/],
  ["https://[2606:4700:4700::1111]/dqs", /names the IP address \[2606:4700:4700::1111\]/],
  ["https://0.0.0.0/dqs", /names the IP address 0\.0\.0\.0/],
  ["https://0/dqs", /names the IP address 0\.0\.0\.0/],
  ["https://10.0.0.1/dqs", /names the IP address 10\.0\.0\.1/],
  ["https://012.0.0.1/dqs", /names the IP address 10\.0\.0\.1/],
  ["https://172.16.5.4/dqs", /names the IP address 172\.16\.5\.4/],
  ["https://192.168.1.20/dqs", /names the IP address 192\.168\.1\.20/],
  ["https://3232235796/dqs", /names the IP address 192\.168\.1\.20/],
  ["https://100.64.0.1/dqs", /names the IP address 100\.64\.0\.1/],
  ["https://169.254.169.254/latest/meta-data", /names the IP address 169\.254\.169\.254/],
  ["https://8.8.8.8/dqs", /names the IP address 8\.8\.8\.8/],
  // Names that are not public.
  ["https://intranet/dqs", /names intranet, a single-label host name/],
  ["https://metadata.google.internal/computeMetadata/v1/", /under \.internal, which is not a public name/],
  ["https://printer.local/dqs", /under \.local,/],
  ["https://router.home.arpa/dqs", /under \.arpa,/],
  ["https://hooks.test/dqs", /under \.test,/],
  ["https://nas.lan./dqs", /under \.lan,/],
  [`https://hooks.example.com/${"x".repeat(MAX_CALLBACK_URL_LENGTH)}`, /characters long; the limit is 2048/],
];

/** URLs a production deployment accepts, each with the URL the webhook goes to (the parser's form). */
const ACCEPTED: [url: string, sentTo: string][] = [
  ["https://hooks.example.com/dqs?token=abc#frag", "https://hooks.example.com/dqs?token=abc#frag"],
  ["https://Hooks.Example.COM:443/dqs", "https://hooks.example.com/dqs"],
  ["https://hooks.example.com./dqs", "https://hooks.example.com./dqs"],
  ["https://bücher.de/dqs", "https://xn--bcher-kva.de/dqs"],
  ["https://localhost.example.com/dqs", "https://localhost.example.com/dqs"],
];

describe("the callback URL rule outside development mode", () => {
  it.each(REFUSED)("should refuse %s and name the rule", (url, rule) => {
    const check = checkCallbackUrl(url, false);

    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.message).toMatch(rule);
  });

  it.each(ACCEPTED)("should accept %s", (url, sentTo) => {
    expect(checkCallbackUrl(url, false)).toEqual({ ok: true, url: sentTo });
  });
});

describe("the callback URL rule in development mode", () => {
  it.each([
    ["http://127.0.0.1:8787/hook", "http://127.0.0.1:8787/hook"],
    ["http://localhost:3000/hook", "http://localhost:3000/hook"],
    ["https://a.localhost:9/hook", "https://a.localhost:9/hook"],
    ["http://[::1]:4000/hook", "http://[::1]:4000/hook"],
    ["http://0x7f.1:5000/", "http://127.0.0.1:5000/"],
  ])("should accept the loopback URL %s so tests can receive calls", (url, sentTo) => {
    expect(checkCallbackUrl(url, true)).toEqual({ ok: true, url: sentTo });
  });

  it.each([
    ["http://10.0.0.1/hook", /must use https/],
    ["https://10.0.0.1/hook", /names the IP address 10\.0\.0\.1/],
    ["https://[::ffff:127.0.0.1]/hook", /names the IP address/],
    ["http://hooks.example.com/hook", /must use https/],
    ["http://user:pw@127.0.0.1:9/hook", /carries a user name or password/],
    ["ftp://127.0.0.1/hook", /must use https, not ftp/],
  ])("should still refuse %s", (url, rule) => {
    const check = checkCallbackUrl(url, true);

    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.message).toMatch(rule);
  });
});

describe("POST /v1/query with a Callback", () => {
  let user: LoggedIn;
  let production: Fetch;

  beforeAll(async () => {
    user = await login("hook_rules");
    production = workerWith({ ...PRODUCTION, QUERY_QUEUE: new TestQueue(), BUILD_QUEUE: new TestQueue() });
  });

  it("should answer 400 naming the rule for each refused URL", async () => {
    for (const [url, rule] of REFUSED) {
      const body = await readEnvelope(
        await submit(user.accessToken, { Sql: "SELECT 1", Callback: { Url: url } }, production),
        400,
      );
      expect(body.Status.Message, url).toMatch(rule);
      expect(body.Status.Message).toMatch(/A completion webhook goes to an https URL of a public host name/);
    }
  });

  it("should answer 400 for a Callback without a string Url", async () => {
    // null is no Callback, as the status shows it (test/http/query.test.ts).
    for (const callback of [{}, { Url: 42 }, "https://hooks.example.com/dqs"]) {
      const body = await readEnvelope(
        await submit(user.accessToken, { Sql: "SELECT 1", Callback: callback }, production),
        400,
      );
      expect(body.Status.Message).toMatch(/^Invalid request: Callback/);
    }
  });

  it("should accept a public https URL and show it in the status, with no delivery yet", async () => {
    const queue = new TestQueue();
    const response = await submit(
      user.accessToken,
      { Sql: "SELECT 1", Callback: { Url: "https://Hooks.Example.COM/dqs" } },
      workerWith({ ...PRODUCTION, QUERY_QUEUE: queue, BUILD_QUEUE: queue }),
    );
    const { Data } = await readEnvelope<{ QueryId: string }>(response, 200);

    const status = await statusOf(user.accessToken, Data.QueryId);
    expect(status.Callback).toEqual({ Url: "https://hooks.example.com/dqs", LastDelivery: null });
  });

  it("should accept a loopback URL in development mode", async () => {
    const queue = new TestQueue();
    const response = await submit(
      user.accessToken,
      { Sql: "SELECT 1", Callback: { Url: "http://127.0.0.1:9/hook" } },
      serviceWith(queue),
    );
    const { Data } = await readEnvelope<{ QueryId: string }>(response, 200);

    const status = await statusOf(user.accessToken, Data.QueryId);
    expect(status.Callback).toEqual({ Url: "http://127.0.0.1:9/hook", LastDelivery: null });
  });

  it("should show Callback null for a query submitted without one", async () => {
    const queue = new TestQueue();
    const response = await submit(user.accessToken, { Sql: "SELECT 1" }, serviceWith(queue));
    const { Data } = await readEnvelope<{ QueryId: string }>(response, 200);

    const status = await statusOf(user.accessToken, Data.QueryId);
    expect(status.Callback).toBeNull();
  });
});
