import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { requestConfig, type Config } from "../../src/worker/config";
import { attachmentDisposition, downloadLocation } from "../../src/worker/storage/download-location";
import { verifyDownloadUrl } from "../../src/worker/storage/signed-url";
import { ORIGIN } from "../support/http";

let key: CryptoKey;
let config: Config;

beforeAll(async () => {
  key = (await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"])) as CryptoKey;
  config = requestConfig(env, `${ORIGIN}/v1/x`);
});

describe("attachmentDisposition", () => {
  it("should send a plain ASCII name as it is", () => {
    expect(attachmentDisposition("orders.csv")).toBe(`attachment; filename="orders.csv"; filename*=UTF-8''orders.csv`);
  });

  it("should give an ASCII fallback and the exact UTF-8 name for anything else", () => {
    expect(attachmentDisposition('résumé "v2"\\.csv')).toBe(
      `attachment; filename="r_sum_ _v2__.csv"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22%5C.csv`,
    );
  });
});

describe("downloadLocation", () => {
  it("should sign the Worker's own /download/ URL, expiring after the configured time, when no R2 credentials are configured", async () => {
    const before = Math.floor(Date.now() / 1000);

    const location = new URL(await downloadLocation(config, key, { key: "data/d1/v1", filename: "orders.csv" }));

    expect(location.origin + location.pathname).toBe(`${ORIGIN}/download/data/d1/v1`);
    const expires = Number(location.searchParams.get("expires"));
    expect(await verifyDownloadUrl([key], location, before)).toEqual({
      ok: true,
      grant: { key: "data/d1/v1", filename: "orders.csv", expires },
    });
    expect(expires - before).toBeGreaterThanOrEqual(config.downloadUrlTtlSeconds);
    expect(expires - before).toBeLessThanOrEqual(config.downloadUrlTtlSeconds + 1);
  });

  it("should presign an R2 S3 URL when credentials are configured", async () => {
    const presigning = requestConfig(
      {
        ...env,
        R2_ACCOUNT_ID: "0123456789abcdef",
        R2_BUCKET_NAME: "dqs-data",
        R2_ACCESS_KEY_ID: "AKIDEXAMPLE",
        R2_SECRET_ACCESS_KEY: "secret",
      } as Env,
      `${ORIGIN}/v1/x`,
    );

    const location = new URL(await downloadLocation(presigning, key, { key: "results/q1.csv", filename: "q1.csv" }));

    expect(location.host).toBe("0123456789abcdef.r2.cloudflarestorage.com");
    expect(location.pathname).toBe("/dqs-data/results/q1.csv");
    expect(location.searchParams.get("X-Amz-Expires")).toBe(String(config.downloadUrlTtlSeconds));
    expect(location.searchParams.get("X-Amz-Algorithm")).toBe("AWS4-HMAC-SHA256");
    expect(location.searchParams.get("X-Amz-Credential")).toMatch(/^AKIDEXAMPLE\/\d{8}\/auto\/s3\/aws4_request$/);
    expect(location.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(location.searchParams.get("response-content-disposition")).toBe(attachmentDisposition("q1.csv"));
  });

  it("should not presign without the secret key, even with the other R2 settings", async () => {
    const partial = requestConfig(
      { ...env, R2_ACCOUNT_ID: "0123456789abcdef", R2_BUCKET_NAME: "dqs-data", R2_ACCESS_KEY_ID: "AKIDEXAMPLE" } as Env,
      `${ORIGIN}/v1/x`,
    );

    const location = new URL(await downloadLocation(partial, key, { key: "data/d1/v1", filename: "orders.csv" }));

    expect(location.origin).toBe(ORIGIN);
  });
});
