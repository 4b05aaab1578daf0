import { decode, encode } from "jose/base64url";

/** What a download URL grants: one object, until a time, under a file name. */
export interface DownloadGrant {
  key: string;
  filename: string;
  /** Epoch seconds. */
  expires: number;
}

const encoder = new TextEncoder();
/** An HMAC-SHA-256 is 32 bytes: 43 base64url characters, the last of which carries 2 spare bits (A, E, I, …, w). */
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;
/** Epoch seconds as we write them: plain digits, no sign, exponent or leading zero. */
const EXPIRES_PATTERN = /^(0|[1-9]\d{0,14})$/;

function signedText(grant: DownloadGrant): string {
  // Newlines cannot occur in keys or file names we issue, so the fields cannot be shifted into each other.
  return `dqs-download-v1\n${grant.key}\n${grant.expires}\n${grant.filename}`;
}

/** A URL under `<origin>/download/` that serves the object until it expires, with no other credential. */
export async function signDownloadUrl(signingKey: CryptoKey, origin: string, grant: DownloadGrant): Promise<string> {
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", signingKey, encoder.encode(signedText(grant))));
  const url = new URL(`${origin}/download/${grant.key.split("/").map(encodeURIComponent).join("/")}`);
  url.searchParams.set("filename", grant.filename);
  url.searchParams.set("expires", String(grant.expires));
  url.searchParams.set("signature", encode(signature));
  return url.toString();
}

export type DownloadCheck = { ok: true; grant: DownloadGrant } | { ok: false; reason: "invalid" | "expired" };

/**
 * Checks a download URL. `crypto.subtle.verify` compares in constant time;
 * any of the keys may have signed it, so a key rotation does not break
 * links already handed out.
 */
export async function verifyDownloadUrl(keys: CryptoKey[], url: URL, nowSeconds: number): Promise<DownloadCheck> {
  let key: string;
  try {
    key = url.pathname
      .replace(/^\/download\//, "")
      .split("/")
      .map(decodeURIComponent)
      .join("/");
  } catch {
    return { ok: false, reason: "invalid" };
  }
  const filename = url.searchParams.get("filename");
  const expiresText = url.searchParams.get("expires") ?? "";
  const bytes = fromBase64url(url.searchParams.get("signature") ?? "");
  // Only the digits we issue: "1e3" or " 1000" would name the same second under other text.
  if (!key || filename === null || !EXPIRES_PATTERN.test(expiresText) || !bytes)
    return { ok: false, reason: "invalid" };
  const expires = Number(expiresText);
  const grant = { key, filename, expires };
  for (const signingKey of keys) {
    if (await crypto.subtle.verify("HMAC", signingKey, bytes, encoder.encode(signedText(grant)))) {
      return expires < nowSeconds ? { ok: false, reason: "expired" } : { ok: true, grant };
    }
  }
  return { ok: false, reason: "invalid" };
}

/** The signature's bytes, or null unless it is exactly an unpadded base64url HMAC-SHA-256 (43 characters). */
function fromBase64url(text: string): Uint8Array | null {
  return SIGNATURE_PATTERN.test(text) ? decode(text) : null;
}
