import { env } from "cloudflare:workers";
import { base64url, decodeJwt, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from "jose";
import { ORIGIN } from "./http";

/** The private key and kid the test configuration signs with (made per run by test/vitest.config.ts). */
export async function testSigningKey(): Promise<{ key: CryptoKey; kid: string; jwk: JWK }> {
  const [jwk] = JSON.parse(env.SIGNING_KEYS) as JWK[];
  if (!jwk?.kid) throw new Error("SIGNING_KEYS of the test configuration holds no key with a kid");
  return { key: (await importJWK(jwk, "ES256")) as CryptoKey, kid: jwk.kid, jwk };
}

/** A fresh ES256 key pair in the form SIGNING_KEYS holds. */
export async function newSigningJwk(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: "ES256" };
}

/** The claims of a real access token, to build look-alikes from. */
export function claimsOf(token: string): JWTPayload {
  return decodeJwt(token);
}

/** Claims an access token of this service carries, for a session, valid for an hour from now. */
export function accessClaims(subject: string, sessionId: string): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return { iss: ORIGIN, aud: "dqs", sub: subject, sid: sessionId, iat: now, exp: now + 3600, jti: crypto.randomUUID() };
}

/** Signs claims as an access token with ES256; header fields can be changed to build forgeries. */
export async function signToken(
  claims: JWTPayload,
  options: { key?: CryptoKey; kid?: string; typ?: string } = {},
): Promise<string> {
  const signer = options.key ? { key: options.key, kid: options.kid ?? "another-key" } : await testSigningKey();
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", kid: options.kid ?? signer.kid, typ: options.typ ?? "at+jwt" })
    .sign(signer.key);
}

/** An unsigned JWT (`alg: none`) with the given header fields and claims. */
export function unsignedToken(header: Record<string, string>, claims: JWTPayload): string {
  const encode = (value: unknown) => base64url.encode(JSON.stringify(value));
  return `${encode({ alg: "none", ...header })}.${encode(claims)}.`;
}
