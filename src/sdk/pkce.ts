import { encode as base64url } from "jose/base64url";

/** A PKCE pair (RFC 7636): the verifier the client keeps and the S256 challenge it sends. */
export interface Pkce {
  verifier: string;
  challenge: string;
}

/** A fresh PKCE pair: 32 random bytes as the verifier, its SHA-256 as the challenge, both base64url. */
export async function createPkce(): Promise<Pkce> {
  const verifier = randomBase64url(32);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return { verifier, challenge: base64url(new Uint8Array(digest)) };
}

/** Random bytes as unpadded base64url: for `state` values and verifiers. */
export function randomBase64url(bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}
