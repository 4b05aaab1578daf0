import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Whether a Chromium is installed here (`.ci/run` installs Debian's). */
export const hasChromium = existsSync(CHROMIUM);

/** Headless Chromium with the flags that keep it off this machine's closed network. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/** On the development provider's page: signs in as `username` and accepts the terms if they are asked for. */
export async function signInOnPage(page: Page, username: string): Promise<void> {
  await page.fill('input[name="username"]', username);
  await page.click('button[type="submit"]');
  await page.waitForLoadState();
  if (await page.locator("#terms-version").count()) {
    await page.click('button[name="accept"]');
    await page.waitForLoadState();
  }
}

/** Logs in through the real pages (development provider, terms, tokens page) and returns the tokens shown. */
export async function browserLogin(
  browser: Browser,
  baseUrl: string,
  username: string,
): Promise<{ accountName: string; accessToken: string; refreshToken: string }> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${baseUrl}/v1/auth`);
    await signInOnPage(page, username);
    return {
      accountName: (await page.textContent("#account-name")) ?? "",
      accessToken: await page.inputValue("#access-token"),
      refreshToken: await page.inputValue("#refresh-token"),
    };
  } finally {
    await context.close();
  }
}
