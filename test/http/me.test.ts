import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { call, readEnvelope, readUnauthorized, workerWith } from "../support/http";
import { authHeader, login } from "../support/login";

interface Me {
  AccountName: string;
  UserId: string;
  TermsVersion: string;
}

describe("GET /v1/me", () => {
  it("should say whom the token acts for: the account, the token's subject and the terms accepted", async () => {
    const { accessToken, accountName } = await login("me-who");

    const body = await readEnvelope<Me>(await call("/v1/me", { headers: authHeader(accessToken) }), 200);

    expect(body.Data).toEqual({
      AccountName: accountName,
      UserId: decodeJwt(accessToken).sub,
      TermsVersion: env.TERMS_VERSION,
    });
    expect(accountName).toBe("me-who");
  });

  it("should give the terms version of the deployment the user accepted", async () => {
    const renewed = workerWith({ TERMS_VERSION: "2026-05" });
    const { accessToken } = await login("me-terms", { via: renewed });

    const body = await readEnvelope<Me>(await call("/v1/me", { headers: authHeader(accessToken) }, renewed), 200);

    expect(body.Data.TermsVersion).toBe("2026-05");
  });

  it("should require an access token", async () => {
    expect(await readUnauthorized(await call("/v1/me"))).toMatch(/Missing bearer token/);
    expect(await readUnauthorized(await call("/v1/me", { headers: authHeader("not.a.jwt") }))).toMatch(
      /not a well-formed JWT|signature/,
    );
  });
});

describe("GET /v1/me/datasets", () => {
  it("should list no datasets for a user who has just logged in", async () => {
    const { accessToken } = await login("me-new-user");

    const body = await readEnvelope<{ DatasetCount: number; DatasetList: unknown[] }>(
      await call("/v1/me/datasets", { headers: authHeader(accessToken) }),
      200,
    );

    expect(body.Data).toEqual({ DatasetCount: 0, DatasetList: [] });
  });

  it("should require an access token", async () => {
    expect(await readUnauthorized(await call("/v1/me/datasets"))).toMatch(/Missing bearer token/);
  });
});
