import { describe, expect, it } from "vitest";
import { call, postJson, readEnvelope, readUnauthorized, workerWith } from "../support/http";
import { acceptTerms, authHeader, isTermsPage, login, loginUntilCallback, type JwtData } from "../support/login";

/** The same deployment after the terms of service were raised to version 2. */
const termsV2 = workerWith({ TERMS_VERSION: "2" });

function datasets(accessToken: string, via = termsV2): Promise<Response> {
  return call("/v1/me/datasets", { headers: authHeader(accessToken) }, via);
}

describe("a new terms of service version", () => {
  it("should answer bearer requests 401 with a message about the terms that points to GET /v1/auth", async () => {
    const tokens = await login("terms-bump-bearer");
    expect((await call("/v1/me/datasets", { headers: authHeader(tokens.accessToken) })).status).toBe(200);

    const message = await readUnauthorized(await datasets(tokens.accessToken));

    expect(message).toMatch(/not accepted the current terms of service \(version 2\)/);
    expect(message).toMatch(/GET \/v1\/auth/);
  });

  it("should answer a refresh 401 with a message about the terms", async () => {
    const tokens = await login("terms-bump-refresh");

    const response = await postJson("/v1/auth/token", { RefreshToken: tokens.refreshToken }, termsV2);

    expect(await readUnauthorized(response)).toMatch(/terms of service.*GET \/v1\/auth/);
  });

  it("should show the terms page with the new version on the next login", async () => {
    await login("terms-bump-page");

    const { response } = await loginUntilCallback("terms-bump-page", "text/html", termsV2);

    const html = await response.text();
    expect(isTermsPage(html)).toBe(true);
    expect(html).toContain('<strong id="terms-version">2</strong>');
  });

  it("should answer a JSON login 401 until the new version is accepted", async () => {
    await login("terms-bump-json");

    const { response } = await loginUntilCallback("terms-bump-json", "application/json", termsV2);

    expect((await readEnvelope(response, 401)).Status.Message).toMatch(/version 2/);
  });

  it("should let requests work again once the new version is accepted", async () => {
    await login("terms-bump-accept");
    const { start } = await loginUntilCallback("terms-bump-accept", "text/html", termsV2);

    const accepted = await readEnvelope<JwtData>(
      await acceptTerms(start.state, start.cookie, "application/json", termsV2),
      200,
    );

    expect((await datasets(accepted.Data.AccessToken)).status).toBe(200);
    expect((await postJson("/v1/auth/token", { RefreshToken: accepted.Data.RefreshToken }, termsV2)).status).toBe(200);
  });

  it("should go through the whole login with the login helper under the new version", async () => {
    await login("terms-bump-helper");

    const tokens = await login("terms-bump-helper", { via: termsV2 });

    expect(tokens.accountName).toBe("terms-bump-helper");
    expect((await datasets(tokens.accessToken)).status).toBe(200);
  });
});

describe("the terms page", () => {
  it("should link the terms when TERMS_URL is set", async () => {
    const withUrl = workerWith({ TERMS_VERSION: "2", TERMS_URL: "https://example.com/terms?v=2&lang=en" });
    await login("terms-link");

    const { response } = await loginUntilCallback("terms-link", "text/html", withUrl);

    const html = await response.text();
    expect(isTermsPage(html)).toBe(true);
    expect(html).toContain('<a href="https://example.com/terms?v=2&amp;lang=en"');
  });

  it("should answer a reload of the accepted form's address (GET) with a page that says where to go", async () => {
    const response = await call("/v1/auth/terms", { headers: { accept: "text/html" } });

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toContain('href="/console/"');
    expect(html).toContain('href="/v1/auth"');
    expect(html).toMatch(/sign in again/i);
  });

  it("should still tell a program that asks for JSON to POST", async () => {
    const response = await call("/v1/auth/terms", { headers: { accept: "application/json" } });

    expect(response.headers.get("allow")).toBe("POST");
    expect((await readEnvelope(response, 405)).Status.Message).toMatch(/use POST/);
  });
});
