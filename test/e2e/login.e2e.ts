import type { Browser, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserLogin, hasChromium, launchBrowser, signInOnPage } from "./support/browser";
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

  /** Signs in as `username` in a fresh browser context and runs `use` on the tokens page. */
  async function onTokensPage(
    username: string,
    { setup, ...options }: BrowserContextOptions & { setup?: string },
    use: (page: Page) => Promise<void>,
  ): Promise<void> {
    const context = await browser.newContext(options);
    try {
      const page = await context.newPage();
      if (setup) await page.addInitScript(setup);
      await page.goto(`${server.url}/v1/auth`);
      await signInOnPage(page, username);
      await use(page);
    } finally {
      await context.close();
    }
  }

  it("should copy each token to the clipboard with its Copy button, saying so", async () => {
    await onTokensPage("e2e-copier", { permissions: ["clipboard-read", "clipboard-write"] }, async (page) => {
      for (const id of ["access-token", "refresh-token"]) {
        await page.click(`button[data-copy="${id}"]`);

        await expect.poll(() => page.textContent(`#${id}-status`)).toBe("Copied");
        const copied = await page.evaluate("navigator.clipboard.readText()");
        expect(copied).toBe(await page.inputValue(`#${id}`));
      }
      expect((await page.inputValue("#access-token")).split(".")).toHaveLength(3);
      await page.screenshot({ path: "/tmp/token-page.png", fullPage: true });
    });
  });

  it("should select the token and say how to copy it where the clipboard cannot be written", async () => {
    // As on a page served over plain http from another host: no navigator.clipboard.
    const setup = "Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined });";
    await onTokensPage("e2e-selector", { setup }, async (page) => {
      await page.click('button[data-copy="refresh-token"]');

      await expect.poll(() => page.textContent("#refresh-token-status")).toMatch(/^Selected: press Ctrl\+C/);
      const selection = await page.evaluate(`(() => {
        const field = document.activeElement;
        return { id: field.id, selected: field.value.slice(field.selectionStart, field.selectionEnd) };
      })()`);
      expect(selection).toEqual({ id: "refresh-token", selected: await page.inputValue("#refresh-token") });
    });
  });

  it("should show the tokens without the Copy buttons when JavaScript is off", async () => {
    await onTokensPage("e2e-nojs", { javaScriptEnabled: false }, async (page) => {
      expect(await page.isVisible("#access-token")).toBe(true);
      expect((await page.inputValue("#access-token")).split(".")).toHaveLength(3);
      expect(await page.isVisible("#refresh-token")).toBe(true);
      expect(await page.locator("button[data-copy]").count()).toBe(2);
      expect(await page.isVisible("button[data-copy]")).toBe(false);
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
