import type { Browser } from "playwright-core";
import { signInOnPage } from "./browser";
import { httpLogin } from "./http-login";

/** The refresh token a user would paste into `dqs login --no-browser`, from a plain HTTP login. */
export async function httpRefreshToken(baseUrl: string, username: string): Promise<string> {
  return (await httpLogin(baseUrl, username)).refreshToken;
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
    await signInOnPage(page, username);
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
