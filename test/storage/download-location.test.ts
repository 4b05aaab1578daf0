import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { requestConfig, type Config } from "../../src/worker/config";
import { attachmentDisposition, downloadLocation } from "../../src/worker/storage/download-location";
import { verifyDownloadUrl } from "../../src/worker/storage/signed-url";
import { ORIGIN } from "../support/http";
import { verifiesAsPresignedGet } from "../support/sigv4";

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

  describe("with R2 S3 credentials", () => {
    const credentials = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };
    const object = { key: "results/q1.csv", filename: 'ünïcödé & "quotes" 100%.csv' };
    let presigning: Config;

    beforeAll(() => {
      presigning = requestConfig(
        {
          ...env,
          R2_ACCOUNT_ID: "0123456789abcdef",
          R2_BUCKET_NAME: "dqs-data",
          R2_ACCESS_KEY_ID: credentials.accessKeyId,
          R2_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        } as Env,
        `${ORIGIN}/v1/x`,
      );
    });

    afterEach(() => {
      vi.useRealTimers();
    });

    /** The service's presigned URL for `object`, signed at 2027-01-15 08:00:00 UTC. */
    async function presigned(): Promise<URL> {
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(new Date("2027-01-15T08:00:00Z"));
      return new URL(await downloadLocation(presigning, key, object));
    }

    it("should presign the object's R2 S3 URL at the current time for the configured time, as an independent SigV4 signer computes it", async () => {
      const location = await presigned();

      expect(location.host).toBe("0123456789abcdef.r2.cloudflarestorage.com");
      expect(location.pathname).toBe("/dqs-data/results/q1.csv");
      expect(location.searchParams.get("X-Amz-Date")).toBe("20270115T080000Z");
      expect(location.searchParams.get("X-Amz-Expires")).toBe(String(config.downloadUrlTtlSeconds));
      expect(location.searchParams.get("X-Amz-Credential")).toBe("AKIDEXAMPLE/20270115/auto/s3/aws4_request");
      expect(location.searchParams.get("response-content-disposition")).toBe(attachmentDisposition(object.filename));
      expect(await verifiesAsPresignedGet(location, credentials)).toBe(true);
    });

    it("should give a URL that does not verify with another secret key", async () => {
      const location = await presigned();

      expect(await verifiesAsPresignedGet(location, { ...credentials, secretAccessKey: "other" })).toBe(false);
    });

    it.each([
      ["the object key", (url: URL) => (url.pathname = "/dqs-data/results/q2.csv")],
      ["the bucket", (url: URL) => (url.pathname = "/other-bucket/results/q1.csv")],
      ["the account", (url: URL) => (url.host = "fedcba9876543210.r2.cloudflarestorage.com")],
      ["the file name", (url: URL) => url.searchParams.set("response-content-disposition", "attachment")],
      ["the expiry", (url: URL) => url.searchParams.set("X-Amz-Expires", "604800")],
      ["the date", (url: URL) => url.searchParams.set("X-Amz-Date", "20270116T080000Z")],
      ["the signature", (url: URL) => url.searchParams.set("X-Amz-Signature", "0".repeat(64))],
      ["an added parameter", (url: URL) => url.searchParams.set("response-content-type", "text/html")],
    ])("should give a URL that no longer verifies once %s is changed", async (_what, change) => {
      const location = await presigned();
      change(location);

      expect(await verifiesAsPresignedGet(location, credentials)).toBe(false);
    });
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
