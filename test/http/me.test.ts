import { describe, expect, it } from "vitest";
import { call, readEnvelope, readUnauthorized } from "../support/http";
import { authHeader, login } from "../support/login";

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
