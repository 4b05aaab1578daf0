import { base64url } from "../util/crypto";

/** What a download URL grants: one object, until a time, under a file name. */
export interface DownloadGrant {
  key: string;
  filename: string;
  /** Epoch seconds. */
  expires: number;
}

const encoder = new TextEncoder();

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
  url.searchParams.set("signature", base64url(signature));
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
  const expires = Number(url.searchParams.get("expires"));
  const signature = url.searchParams.get("signature");
  if (!key || filename === null || !Number.isSafeInteger(expires) || !signature)
    return { ok: false, reason: "invalid" };
  const grant = { key, filename, expires };
  const bytes = fromBase64url(signature);
  if (!bytes) return { ok: false, reason: "invalid" };
  for (const signingKey of keys) {
    if (await crypto.subtle.verify("HMAC", signingKey, bytes, encoder.encode(signedText(grant)))) {
      return expires < nowSeconds ? { ok: false, reason: "expired" } : { ok: true, grant };
    }
  }
  return { ok: false, reason: "invalid" };
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
