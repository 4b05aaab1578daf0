import { decode, encode } from "jose/base64url";

/*
 * The cursor of a result page: where the next page starts, bound to its query
 * and signed (HMAC-SHA-256 with a key derived from the signing keys), so a
 * client can neither edit it nor take it to another query. Opaque to clients:
 * base64url of the row number, a dot, base64url of the signature.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const ROW_PATTERN = /^(0|[1-9]\d{0,14})$/;

function signedText(queryId: string, row: string): Uint8Array {
  return encoder.encode(`dqs-rows-cursor-v1\n${queryId}\n${row}`);
}

/** The cursor of the page of `queryId`'s result that starts at data row `row`. */
export async function signCursor(key: CryptoKey, queryId: string, row: number): Promise<string> {
  const text = String(row);
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", key, signedText(queryId, text)));
  return `${encode(text)}.${encode(signature)}`;
}

/** The row a cursor this service issued for `queryId` starts at, or null for anything else. Any key may have signed it. */
export async function verifyCursor(keys: CryptoKey[], queryId: string, cursor: string): Promise<number | null> {
  const [rowPart = "", signaturePart = "", extra] = cursor.split(".");
  if (extra !== undefined) return null;
  let row: string;
  let signature: Uint8Array<ArrayBuffer>;
  try {
    row = decoder.decode(decode(rowPart));
    signature = new Uint8Array(decode(signaturePart));
  } catch {
    return null;
  }
  if (!ROW_PATTERN.test(row)) return null;
  for (const key of keys)
    if (await crypto.subtle.verify("HMAC", key, signature, signedText(queryId, row))) return Number(row);
  return null;
}
