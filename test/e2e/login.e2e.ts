import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserLogin, hasChromium, launchBrowser } from "./support/browser";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// CI installs Chromium; anywhere else without it the browser test is skipped, never silently in CI.
const browserTest = hasChromium || process.env.CI ? describe : describe.skip;

let server: DevServer;

beforeAll(async () => {
  server = await startWranglerDev();
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

describe("wrangler dev", () => {
  it("should answer unknown paths with the JSON envelope", async () => {
    const response = await fetch(`${server.url}/v1/no-such-thing`);
    expect(response.status).toBe(404);
    expect(response.headers.get("x-request-id")).toBeTruthy();
    expect(await response.json()).toEqual({
      Status: { Code: 404, Message: expect.stringContaining("No such endpoint") },
    });
  });

  it("should serve the OpenAPI document", async () => {
    const response = await fetch(`${server.url}/v1/openapi.json`);
    const doc = (await response.json()) as { openapi: string; info: { version: string } };
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.version).toBe("0.0.0");
  });
});

browserTest("login in a browser against wrangler dev", () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("should log in through the real pages and call the API with the token shown", async () => {
    const tokens = await browserLogin(browser, server.url, "e2e-alice");
    expect(tokens.accountName).toBe("e2e-alice");

    const datasets = await fetch(`${server.url}/v1/me/datasets`, {
      headers: { authorization: `Bearer ${tokens.accessToken}` },
    });
    expect(datasets.status).toBe(200);
    expect(await datasets.json()).toEqual({
      Status: { Code: 200, Message: "OK" },
      Data: { DatasetCount: 0, DatasetList: [] },
    });
  });

  it("should renew tokens once and revoke the session when a spent refresh token comes back", async () => {
    const tokens = await browserLogin(browser, server.url, "e2e-bob");
    const renew = () =>
      fetch(`${server.url}/v1/auth/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ RefreshToken: tokens.refreshToken }),
      });
    const first = await renew();
    expect(first.status).toBe(200);
    const renewed = (await first.json()) as { Data: { AccessToken: string } };
    expect((await renew()).status).toBe(401);

    const afterReuse = await fetch(`${server.url}/v1/me/datasets`, {
      headers: { authorization: `Bearer ${renewed.Data.AccessToken}` },
    });
    expect(afterReuse.status).toBe(401);
  });
});
