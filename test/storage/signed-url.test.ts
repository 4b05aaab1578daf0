import { createHmac } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { signDownloadUrl, verifyDownloadUrl, type DownloadGrant } from "../../src/worker/storage/signed-url";

const ORIGIN = "https://dqs.example.test";
const NOW = 1_800_000_000;
const GRANT: DownloadGrant = { key: "data/ds-1/v-1", filename: "orders.csv", expires: NOW + 900 };

let key: CryptoKey;
let otherKey: CryptoKey;

function hmacKey(): Promise<CryptoKey> {
  return crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]) as Promise<CryptoKey>;
}

beforeAll(async () => {
  key = await hmacKey();
  otherKey = await hmacKey();
});

async function signed(grant: DownloadGrant = GRANT, signingKey: CryptoKey = key): Promise<URL> {
  return new URL(await signDownloadUrl(signingKey, ORIGIN, grant));
}

describe("signDownloadUrl", () => {
  it("should put the key in the path and the file name, expiry and signature in the query", async () => {
    const url = await signed();

    expect(url.origin).toBe(ORIGIN);
    expect(url.pathname).toBe("/download/data/ds-1/v-1");
    expect(url.searchParams.get("filename")).toBe("orders.csv");
    expect(url.searchParams.get("expires")).toBe(String(NOW + 900));
    expect(url.searchParams.get("signature")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("should sign the key, expiry and file name with HMAC-SHA-256 as node:crypto computes it, so issued links stay valid across releases", async () => {
    const secret = crypto.getRandomValues(new Uint8Array(32));
    const rawKey = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const grant = { key: "results/a b+c%d.csv", filename: 'ünïcödé & "quotes".csv', expires: NOW + 1 };

    const url = await signed(grant, rawKey);

    const text = `dqs-download-v1\n${grant.key}\n${grant.expires}\n${grant.filename}`;
    expect(url.searchParams.get("signature")).toBe(createHmac("sha256", secret).update(text).digest("base64url"));
  });
});

describe("verifyDownloadUrl", () => {
  it("should give back the grant of a URL it signed", async () => {
    expect(await verifyDownloadUrl([key], await signed(), NOW)).toEqual({ ok: true, grant: GRANT });
  });

  it("should keep keys and file names with unusual characters intact", async () => {
    const grant = { key: "results/a b+c%d.csv", filename: 'ünïcödé & "quotes".csv', expires: NOW + 1 };

    expect(await verifyDownloadUrl([key], await signed(grant), NOW)).toEqual({ ok: true, grant });
  });

  it("should accept a URL until its expiry second, and call it expired after", async () => {
    const url = await signed();

    expect((await verifyDownloadUrl([key], url, NOW + 900)).ok).toBe(true);
    expect(await verifyDownloadUrl([key], url, NOW + 901)).toEqual({ ok: false, reason: "expired" });
  });

  it.each([
    ["the key", (url: URL) => (url.pathname = "/download/data/ds-1/v-2")],
    ["the file name", (url: URL) => url.searchParams.set("filename", "other.csv")],
    ["the expiry", (url: URL) => url.searchParams.set("expires", String(NOW + 9000))],
    ["the signature", (url: URL) => url.searchParams.set("signature", "A".repeat(43))],
  ])("should refuse a URL whose %s was changed", async (_what, change) => {
    const url = await signed();
    change(url);

    expect(await verifyDownloadUrl([key], url, NOW)).toEqual({ ok: false, reason: "invalid" });
  });

  it("should call a changed URL invalid, not expired, even after its expiry", async () => {
    const url = await signed();
    url.searchParams.set("filename", "other.csv");

    expect(await verifyDownloadUrl([key], url, NOW + 10_000)).toEqual({ ok: false, reason: "invalid" });
  });

  it.each([
    ["no signature", (url: URL) => url.searchParams.delete("signature")],
    ["a signature that is not base64url", (url: URL) => url.searchParams.set("signature", "abc+/=")],
    ["no file name", (url: URL) => url.searchParams.delete("filename")],
    ["no expiry", (url: URL) => url.searchParams.delete("expires")],
    ["an expiry that is not a whole number", (url: URL) => url.searchParams.set("expires", "1.5")],
    ["an expiry written with an exponent", (url: URL) => url.searchParams.set("expires", "1.8e9")],
    ["a negative expiry", (url: URL) => url.searchParams.set("expires", "-1")],
    ["an empty expiry", (url: URL) => url.searchParams.set("expires", "")],
    ["a one-character signature", (url: URL) => url.searchParams.set("signature", "A")],
    ["a signature one character short", (url: URL) => url.searchParams.set("signature", "A".repeat(42))],
    ["a signature one character long", (url: URL) => url.searchParams.set("signature", "A".repeat(44))],
    ["a padded signature", (url: URL) => url.searchParams.set("signature", `${"A".repeat(43)}=`)],
    ["a signature with spare bits set", (url: URL) => url.searchParams.set("signature", `${"A".repeat(42)}B`)],
    ["no key", (url: URL) => (url.pathname = "/download/")],
    ["a key that is not valid percent-encoding", (url: URL) => (url.pathname = "/download/data/%E0%A4%A")],
  ])("should refuse a URL with %s", async (_what, change) => {
    const url = await signed();
    change(url);

    expect(await verifyDownloadUrl([key], url, NOW)).toEqual({ ok: false, reason: "invalid" });
  });

  it("should refuse a URL signed with another key", async () => {
    expect(await verifyDownloadUrl([key], await signed(GRANT, otherKey), NOW)).toEqual({
      ok: false,
      reason: "invalid",
    });
  });

  it("should accept a URL signed with any of the keys, so links survive a key rotation", async () => {
    expect(await verifyDownloadUrl([otherKey, key], await signed(GRANT, key), NOW)).toEqual({ ok: true, grant: GRANT });
  });
});
