import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import { downloadLocation } from "../../src/storage/download-location";
import { verifyDownloadUrl } from "../../src/storage/signed-url";
import { env } from "cloudflare:workers";

async function hmacKey(): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", new TextEncoder().encode("k".repeat(32)), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

describe("downloadLocation", () => {
  it("should sign the Worker's own /download/ URL when no R2 credentials are configured", async () => {
    const config = readConfig(env, "http://dqs.test/v1/x");
    const key = await hmacKey();
    const location = new URL(await downloadLocation(config, key, { key: "data/d1/v1", filename: "orders.csv" }));
    expect(location.origin + location.pathname).toBe("http://dqs.test/download/data/d1/v1");
    const check = await verifyDownloadUrl([key], location, Math.floor(Date.now() / 1000));
    expect(check).toEqual({ ok: true, grant: { key: "data/d1/v1", filename: "orders.csv", expires: expect.any(Number) } });
    if (check.ok) expect(check.grant.expires - Date.now() / 1000).toBeGreaterThan(890);
  });

  it("should presign an R2 S3 URL when credentials are configured", async () => {
    const config = readConfig(
      {
        ...env,
        R2_ACCOUNT_ID: "0123456789abcdef",
        R2_BUCKET_NAME: "dqs-data",
        R2_ACCESS_KEY_ID: "AKIDEXAMPLE",
        R2_SECRET_ACCESS_KEY: "secret",
      } as Env,
      "http://dqs.test/v1/x",
    );
    const location = new URL(await downloadLocation(config, await hmacKey(), { key: "results/q1.csv", filename: "q1.csv" }));
    expect(location.host).toBe("0123456789abcdef.r2.cloudflarestorage.com");
    expect(location.pathname).toBe("/dqs-data/results/q1.csv");
    expect(location.searchParams.get("X-Amz-Expires")).toBe("900");
    expect(location.searchParams.get("X-Amz-Algorithm")).toBe("AWS4-HMAC-SHA256");
    expect(location.searchParams.get("X-Amz-Credential")).toMatch(/^AKIDEXAMPLE\/\d{8}\/auto\/s3\/aws4_request$/);
    expect(location.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(location.searchParams.get("response-content-disposition")).toContain('filename="q1.csv"');
  });
});
