import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { runMaintenance } from "../../src/worker/maintenance/scheduled";
import {
  createDataset,
  dataItemRow,
  downloadLocation,
  followDownload,
  gzip,
  makeOrphansDue,
  uniqueName,
  uploadOk,
} from "../support/catalog";
import { call, ORIGIN, readEnvelope, readUnauthorized, workerWith } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import { verifiesAsPresignedGet } from "../support/sigv4";

const ORDERS = "id,item\n1,apple\n2,banana\n3,cherry\n";
const SIZE = ORDERS.length;

let owner: LoggedIn;
let dataset: string;
let gzipped: Uint8Array<ArrayBuffer>;

beforeAll(async () => {
  owner = await login("dl-owner");
  const name = uniqueName("dl");
  dataset = `${owner.accountName}/${name}`;
  await createDataset(owner.accessToken, owner.accountName, name);
  await uploadOk(owner.accessToken, `${dataset}/orders.csv`, ORDERS);
  gzipped = await gzip(ORDERS);
  await uploadOk(owner.accessToken, `${dataset}/events.csv`, gzipped, {}, "events.csv");
  await uploadOk(owner.accessToken, `${dataset}/archive.csv.gz`, gzipped, {}, "archive.csv.gz");
});

afterEach(() => {
  vi.useRealTimers();
});

function text(bytes: ArrayBuffer): string {
  return new TextDecoder().decode(bytes);
}

/** The location with one query parameter replaced. */
function withParam(location: string, name: string, value: string): string {
  const url = new URL(location);
  url.searchParams.set(name, value);
  return url.toString();
}

describe("GET /v1/data/{AccountName}/{DatasetName}/{DataName}/rawdata", () => {
  it("should redirect to a signed /download/ URL that names the file and expires in DOWNLOAD_URL_TTL_SECONDS", async () => {
    const before = Math.floor(Date.now() / 1000);

    const response = await call(`/v1/data/${dataset}/orders.csv/rawdata`, { headers: authHeader(owner.accessToken) });

    expect(response.status).toBe(302);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const location = new URL(response.headers.get("location") ?? "");
    expect(location.origin).toBe(ORIGIN);
    expect(location.pathname).toMatch(/^\/download\/data\/[^/]+\/[^/]+$/);
    expect(location.searchParams.get("filename")).toBe("orders.csv");
    expect(location.searchParams.get("signature")).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const expires = Number(location.searchParams.get("expires"));
    const ttl = Number(env.DOWNLOAD_URL_TTL_SECONDS);
    expect(expires).toBeGreaterThanOrEqual(before + ttl);
    expect(expires).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + ttl);
  });

  it("should redirect to an R2 presigned URL when R2 S3 credentials are configured", async () => {
    const credentials = { accessKeyId: "AKID", secretAccessKey: "secret" };
    // Secrets are not in the generated Env type.
    const secrets: Record<string, string> = {
      R2_ACCESS_KEY_ID: credentials.accessKeyId,
      R2_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    };
    const presigning = workerWith({ R2_ACCOUNT_ID: "acct123", R2_BUCKET_NAME: "dqs-data", ...secrets });
    const row = await dataItemRow(...(dataset.split("/") as [string, string]), "orders.csv");

    const response = await call(
      `/v1/data/${dataset}/orders.csv/rawdata`,
      { headers: authHeader(owner.accessToken) },
      presigning,
    );

    expect(response.status).toBe(302);
    const location = new URL(response.headers.get("location") ?? "");
    expect(`${location.origin}${location.pathname}`).toBe(
      `https://acct123.r2.cloudflarestorage.com/dqs-data/${row!.objectKey}`,
    );
    expect(location.searchParams.get("response-content-disposition")).toContain('filename="orders.csv"');
    expect(await verifiesAsPresignedGet(location, credentials)).toBe(true);
  });

  it("should answer 404 for a data item that does not exist", async () => {
    const body = await readEnvelope(
      await call(`/v1/data/${dataset}/nothing.csv/rawdata`, { headers: authHeader(owner.accessToken) }),
      404,
    );

    expect(body.Status.Message).toBe(`Data ${dataset}/nothing.csv not found, or you may not access it.`);
  });

  it.each(["Orders.csv", "ORDERS.CSV"])("should answer 404 for %s: names are case-sensitive", async (dataName) => {
    await readEnvelope(
      await call(`/v1/data/${dataset}/${dataName}/rawdata`, { headers: authHeader(owner.accessToken) }),
      404,
    );
  });

  it.each([".orders.csv", "a%20b.csv", "x".repeat(129)])(
    "should answer 404 like a missing item for the invalid DataName %s",
    async (dataName) => {
      const body = await readEnvelope(
        await call(`/v1/data/${dataset}/${dataName}/rawdata`, { headers: authHeader(owner.accessToken) }),
        404,
      );

      expect(body.Status.Message).toBe(
        `Data ${dataset}/${decodeURIComponent(dataName)} not found, or you may not access it.`,
      );
    },
  );

  it("should require an access token", async () => {
    expect(await readUnauthorized(await call(`/v1/data/${dataset}/orders.csv/rawdata`))).toMatch(
      /Missing bearer token/,
    );
  });
});

describe("GET /download/...", () => {
  it("should serve the exact bytes without Authorization, with Content-Length, ETag and an attachment disposition", async () => {
    const location = await downloadLocation(owner.accessToken, `${dataset}/orders.csv`);

    const response = await followDownload(location);

    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(SIZE));
    expect(response.headers.get("etag")).toMatch(/^"[0-9a-f]+"$/);
    expect(response.headers.get("content-disposition")).toBe(
      `attachment; filename="orders.csv"; filename*=UTF-8''orders.csv`,
    );
    expect(response.headers.get("accept-ranges")).toBe("bytes");
    expect(text(await response.arrayBuffer())).toBe(ORDERS);
  });

  it("should give the same ETag as the stored object", async () => {
    const row = await dataItemRow(...(dataset.split("/") as [string, string]), "orders.csv");

    const response = await followDownload(await downloadLocation(owner.accessToken, `${dataset}/orders.csv`));

    expect(response.headers.get("etag")).toBe((await env.BUCKET.head(row!.objectKey))!.httpEtag);
    await response.arrayBuffer();
  });

  it("should answer HEAD with the headers and no body", async () => {
    const location = await downloadLocation(owner.accessToken, `${dataset}/orders.csv`);

    const response = await followDownload(location, { method: "HEAD" });

    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(SIZE));
    expect(await response.text()).toBe("");
  });

  it.each([
    ["bytes=0-9", 0, 9],
    ["bytes=5-", 5, SIZE - 1],
    ["bytes=-3", SIZE - 3, SIZE - 1],
    ["bytes=10-100000", 10, SIZE - 1],
  ])("should answer Range: %s with 206 and that part", async (range, first, last) => {
    const location = await downloadLocation(owner.accessToken, `${dataset}/orders.csv`);

    const response = await followDownload(location, { headers: { range } });

    expect(response.status).toBe(206);
    expect(response.headers.get("content-range")).toBe(`bytes ${first}-${last}/${SIZE}`);
    expect(response.headers.get("content-length")).toBe(String(last - first + 1));
    expect(text(await response.arrayBuffer())).toBe(ORDERS.slice(first, last + 1));
  });

  it.each([`bytes=${SIZE}-`, "bytes=1000-2000", "bytes=-0"])(
    "should answer an unsatisfiable Range: %s with 416",
    async (range) => {
      const location = await downloadLocation(owner.accessToken, `${dataset}/orders.csv`);

      const response = await followDownload(location, { headers: { range } });

      expect(response.headers.get("content-range")).toBe(`bytes */${SIZE}`);
      const body = await readEnvelope(response, 416);
      expect(body.Status.Message).toBe(`The requested range is outside the file (${SIZE} bytes).`);
    },
  );

  it.each([
    [
      "a changed signature",
      (location: string) => {
        const signature = new URL(location).searchParams.get("signature")!;
        const flipped = signature[0] === "A" ? `B${signature.slice(1)}` : `A${signature.slice(1)}`;
        return withParam(location, "signature", flipped);
      },
    ],
    ["a signature that is not base64url", (location: string) => withParam(location, "signature", "%%%")],
    ["no signature", (location: string) => location.replace(/&signature=[^&]*/, "")],
    ["a changed key", (location: string) => location.replace(/\/download\/data\/[^/]+\//, "/download/data/another/")],
    ["a changed filename", (location: string) => withParam(location, "filename", "other.csv")],
    [
      "a later expiry",
      (location: string) =>
        withParam(location, "expires", String(Number(new URL(location).searchParams.get("expires")) + 3600)),
    ],
    ["an expiry that is not a number", (location: string) => withParam(location, "expires", "soon")],
  ])("should answer 403 for %s", async (_what, tamper) => {
    const location = await downloadLocation(owner.accessToken, `${dataset}/orders.csv`);

    const body = await readEnvelope(await followDownload(tamper(location)), 403);

    expect(body.Status.Message).toBe("This download link is not valid (it was changed or is incomplete).");
  });

  it.each([
    "/download/x?filename=a&expires=99999999999&signature=A",
    "/download/x?filename=a&expires=99999999999&signature=AAA",
    `/download/x?filename=a&expires=99999999999&signature=${"A".repeat(44)}`,
    `/download/x?filename=a&expires=99999999999&signature=${"%".repeat(43)}`,
    `/download/x?filename=a&expires=soon&signature=${"A".repeat(43)}`,
    `/download/x?filename=a&expires=1e11&signature=${"A".repeat(43)}`,
    `/download/x?expires=99999999999&signature=${"A".repeat(43)}`,
    "/download/x?filename=a&expires=99999999999",
    "/download/x?filename=a&signature=A",
    "/download/x",
    `/download/?filename=a&expires=99999999999&signature=${"A".repeat(43)}`,
    `/download/%E0%A4%A?filename=a&expires=99999999999&signature=${"A".repeat(43)}`,
  ])("should answer a malformed link %s with 403 in the envelope", async (path) => {
    for (const method of ["GET", "HEAD"]) {
      const response = await call(path, { method });

      if (method === "HEAD") expect(response.status).toBe(403);
      else
        expect((await readEnvelope(response, 403)).Status.Message).toBe(
          "This download link is not valid (it was changed or is incomplete).",
        );
    }
  });

  it("should answer 403 saying so once the link has expired", async () => {
    const location = await downloadLocation(owner.accessToken, `${dataset}/orders.csv`);
    const ttl = Number(env.DOWNLOAD_URL_TTL_SECONDS);

    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + (ttl - 5) * 1000);
    const stillValid = await followDownload(location);
    vi.setSystemTime(Date.now() + 10_000);
    const expired = await followDownload(location);

    expect(stillValid.status).toBe(200);
    await stillValid.arrayBuffer();
    const body = await readEnvelope(expired, 403);
    expect(body.Status.Message).toBe("This download link has expired; ask the API for a new one.");
  });

  it("should send a gzipped item as it was uploaded, under a .gz file name", async () => {
    const location = await downloadLocation(owner.accessToken, `${dataset}/events.csv`);

    const response = await followDownload(location);

    expect(new URL(location).searchParams.get("filename")).toBe("events.csv.gz");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/gzip");
    expect(response.headers.get("content-disposition")).toContain('filename="events.csv.gz"');
    expect(response.headers.get("content-encoding")).toBeNull();
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(bytes).toEqual(gzipped);
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);
  });

  it("should not add a second .gz to a gzipped item whose name already ends in .gz", async () => {
    const location = await downloadLocation(owner.accessToken, `${dataset}/archive.csv.gz`);

    expect(new URL(location).searchParams.get("filename")).toBe("archive.csv.gz");
    expect(new Uint8Array(await (await followDownload(location)).arrayBuffer())).toEqual(gzipped);
  });

  it("should forbid sniffing, so a data item named .html is never shown as a page", async () => {
    await uploadOk(owner.accessToken, `${dataset}/page.html`, "tag\n<script>alert(1)</script>\n");
    const location = await downloadLocation(owner.accessToken, `${dataset}/page.html`);

    const responses = [
      await followDownload(location),
      await followDownload(location, { headers: { range: "bytes=0-3" } }),
    ];

    for (const response of responses) {
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("content-type")).toBe("text/csv; charset=utf-8");
      expect(response.headers.get("content-disposition")).toMatch(/^attachment; filename="page.html"/);
      expect(response.headers.get("content-security-policy")).toContain("default-src 'none'");
      await response.arrayBuffer();
    }
    const refused = await followDownload(withParam(location, "filename", "other.html"));
    expect(refused.headers.get("x-content-type-options")).toBe("nosniff");
    await readEnvelope(refused, 403);
  });

  it("should send a plain item with a CSV content type", async () => {
    const response = await followDownload(await downloadLocation(owner.accessToken, `${dataset}/orders.csv`));

    expect(response.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    await response.arrayBuffer();
  });

  it("should keep serving a link issued before a replacement until the old object is swept, then answer 404", async () => {
    const name = uniqueName("dl-replace");
    await createDataset(owner.accessToken, owner.accountName, name);
    const path = `${owner.accountName}/${name}/item.csv`;
    await uploadOk(owner.accessToken, path, "v\n1\n");
    const oldLocation = await downloadLocation(owner.accessToken, path);

    await uploadOk(owner.accessToken, path, "v\n2\n");
    const beforeSweep = await followDownload(oldLocation);
    const newBytes = await followDownload(await downloadLocation(owner.accessToken, path));
    await makeOrphansDue("data/");
    await runMaintenance(env);
    const afterSweep = await followDownload(oldLocation);

    expect(text(await beforeSweep.arrayBuffer())).toBe("v\n1\n");
    expect(text(await newBytes.arrayBuffer())).toBe("v\n2\n");
    const body = await readEnvelope(afterSweep, 404);
    expect(body.Status.Message).toBe("The file behind this download link no longer exists.");
  });
});
