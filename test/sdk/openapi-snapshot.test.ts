import { describe, expect, it } from "vitest";
import { call } from "../support/http";

const STALE = "src/sdk/openapi.json is stale: run `npm run sdk:generate` (regenerates it and src/sdk/openapi-types.ts)";

describe("the SDK's OpenAPI snapshot", () => {
  it("should equal the document the service serves, without the deployment's servers", async () => {
    const response = await call("/v1/openapi.json");
    expect(response.status).toBe(200);
    const { servers: _servers, ...document } = await response.json<Record<string, unknown>>();

    // `npm run sdk:generate` runs this test with --update, which rewrites the snapshot.
    await expect(`${JSON.stringify(document, null, 2)}\n`).toMatchFileSnapshot("../../src/sdk/openapi.json", STALE);
  });
});
