import { Sha256 } from "@aws-crypto/sha256-js";
import { SignatureV4 } from "@smithy/signature-v4";

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

function parseAmzDate(value: string): Date {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!match) throw new Error(`X-Amz-Date ${value} is not YYYYMMDDTHHMMSSZ`);
  const [, year, month, day, hour, minute, second] = match.map(Number);
  return new Date(Date.UTC(year!, month! - 1, day, hour, minute, second));
}

/**
 * Checks a presigned S3 GET URL the way R2 would: re-signs its path and
 * parameters at the date and expiry it claims with AWS's own SigV4 signer
 * (@smithy/signature-v4, independent of the aws4fetch the service signs with)
 * and compares every SigV4 parameter, the signature included.
 */
export async function verifiesAsPresignedGet(url: URL, credentials: S3Credentials): Promise<boolean> {
  const params = Object.fromEntries(url.searchParams);
  const date = params["X-Amz-Date"];
  const expires = params["X-Amz-Expires"];
  if (date === undefined || expires === undefined) return false;
  const query = Object.fromEntries(Object.entries(params).filter(([name]) => !name.startsWith("X-Amz-")));
  // S3 signs the path as sent (no second escaping) and, in a presigned URL, an unsigned payload.
  const signer = new SignatureV4({ credentials, region: "auto", service: "s3", sha256: Sha256, uriEscapePath: false });
  const unsignedPayload = new Set(["x-amz-content-sha256"]);
  const resigned = await signer.presign(
    {
      method: "GET",
      protocol: url.protocol,
      hostname: url.hostname,
      path: url.pathname,
      query,
      headers: { host: url.host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
    },
    {
      signingDate: parseAmzDate(date),
      expiresIn: Number(expires),
      unhoistableHeaders: unsignedPayload,
      unsignableHeaders: unsignedPayload,
    },
  );
  const expected = Object.entries(resigned.query ?? {}).filter(([name]) => name.startsWith("X-Amz-"));
  const got = Object.entries(params).filter(([name]) => name.startsWith("X-Amz-"));
  return (
    expected.length === got.length && expected.every(([name, value]) => params[name] === value && value !== undefined)
  );
}
