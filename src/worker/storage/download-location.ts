import { AwsClient } from "aws4fetch";
import type { Config } from "../config";
import { nowSeconds } from "../util/time";
import { signDownloadUrl } from "./signed-url";

/** RFC 6266 `Content-Disposition: attachment` with an ASCII fallback and the exact UTF-8 name. */
export function attachmentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * The short-lived URL a download redirect points to: an R2 presigned URL when
 * S3 credentials are configured, else the Worker's own signed /download/ URL.
 */
export async function downloadLocation(
  config: Config,
  urlSigningKey: CryptoKey,
  object: { key: string; filename: string },
): Promise<string> {
  const ttl = config.downloadUrlTtlSeconds;
  if (config.r2Presign) {
    const { accountId, bucketName, accessKeyId, secretAccessKey } = config.r2Presign;
    const client = new AwsClient({ accessKeyId, secretAccessKey, service: "s3", region: "auto" });
    const url = new URL(`https://${accountId}.r2.cloudflarestorage.com/${bucketName}/${object.key}`);
    url.searchParams.set("X-Amz-Expires", String(ttl));
    url.searchParams.set("response-content-disposition", attachmentDisposition(object.filename));
    const signed = await client.sign(new Request(url, { method: "GET" }), { aws: { signQuery: true } });
    return signed.url;
  }
  return signDownloadUrl(urlSigningKey, config.publicUrl, {
    key: object.key,
    filename: object.filename,
    expires: nowSeconds() + ttl,
  });
}
