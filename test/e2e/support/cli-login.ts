import type { Browser } from "playwright-core";

/**
 * Logs in through the development provider over plain HTTP (as `curl` with a
 * cookie jar would) and returns the refresh token the tokens page hands out:
 * what a user pastes into `dqs login --no-browser`.
 */
export async function httpRefreshToken(baseUrl: string, username: string): Promise<string> {
  let cookie = "";
  const step = async (url: string, init: RequestInit = {}) => {
    const response = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), cookie },
    });
    const set = response.headers.getSetCookie().find((line) => line.startsWith("dqs_login="));
    if (set) cookie = set.split(";")[0]!;
    return response;
  };
  const start = await step(`${baseUrl}/v1/auth`);
  const authorize = new URL(start.headers.get("location")!);
  const form = new URLSearchParams(authorize.searchParams);
  form.set("username", username);
  const signedIn = await step(`${baseUrl}/idp/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form,
  });
  let tokens = await step(signedIn.headers.get("location")!, { headers: { accept: "application/json" } });
  if (tokens.status === 401)
    tokens = await step(`${baseUrl}/v1/auth/terms`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ state: cookie.slice("dqs_login=".length), accept: "yes" }),
    });
  if (tokens.status !== 200) throw new Error(`login failed: ${tokens.status} ${await tokens.text()}`);
  return ((await tokens.json()) as { Data: { RefreshToken: string } }).Data.RefreshToken;
}

/**
 * Plays the user's part of `dqs login` in headless Chromium: opens the URL
 * the CLI printed, signs in at the development provider, accepts the terms
 * when asked, and returns the page the browser lands on at the CLI's
 * loopback address.
 */
export async function browserLoopbackLogin(
  browser: Browser,
  loginUrl: string,
  username: string,
): Promise<{ url: string; title: string; message: string }> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(loginUrl);
    await page.fill('input[name="username"]', username);
    await page.click('button[type="submit"]');
    await page.waitForLoadState();
    if (await page.locator("#terms-version").count()) {
      await page.click('button[name="accept"]');
      await page.waitForLoadState();
    }
    await page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
    return {
      url: page.url(),
      title: (await page.textContent("#title")) ?? "",
      message: (await page.textContent("#message")) ?? "",
    };
  } finally {
    await context.close();
  }
}
