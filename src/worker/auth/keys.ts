import { createLocalJWKSet, exportJWK, generateKeyPair, importJWK, type JSONWebKeySet, type JWK } from "jose";
import { ConfigError, type Settings } from "../config";
import { randomToken } from "../util/crypto";

/** The only algorithm this service signs or accepts. Pinned: verification never takes it from a token header. */
export const SIGNING_ALG = "ES256";

/** The service's signing keys: the first signs, all of them verify, so a new key can be added before the old one is retired. */
export interface KeySet {
  signingKey: CryptoKey;
  signingKid: string;
  publicJwks: JSONWebKeySet;
  verificationKeys: ReturnType<typeof createLocalJWKSet>;
  /** HMAC keys for download URLs, derived (HKDF) from each signing key in the same order: the first signs. */
  urlSigningKeys: CryptoKey[];
  /** HMAC keys for the cursors of result pages, derived the same way under another label. */
  cursorKeys: CryptoKey[];
}

const cache = new Map<string, Promise<KeySet>>();

/**
 * Loads the key set from the SIGNING_KEYS secret. In development mode without
 * that secret, a key generated on first use is kept in D1, so a local run needs
 * no key committed or created by hand.
 */
export async function loadKeys(env: Env, config: Settings): Promise<KeySet> {
  const source = env.SIGNING_KEYS || (config.development ? await devKeys(env.DB) : "");
  if (!source) throw new ConfigError("SIGNING_KEYS is not set");
  let keys = cache.get(source);
  if (!keys) {
    keys = buildKeySet(source);
    keys.catch(() => cache.delete(source));
    cache.set(source, keys);
  }
  return keys;
}

async function buildKeySet(source: string): Promise<KeySet> {
  let jwks: JWK[];
  try {
    const parsed: unknown = JSON.parse(source);
    jwks = (Array.isArray(parsed) ? parsed : [parsed]) as JWK[];
  } catch {
    throw new ConfigError("SIGNING_KEYS is not JSON");
  }
  if (jwks.length === 0) throw new ConfigError("SIGNING_KEYS holds no key");
  const publicKeys: JWK[] = [];
  for (const jwk of jwks) {
    if (jwk.kty !== "EC" || jwk.crv !== "P-256" || !jwk.d || !jwk.kid)
      throw new ConfigError("every SIGNING_KEYS entry must be a private EC P-256 JWK with a kid");
    const { d: _private, ...publicPart } = jwk;
    publicKeys.push({ ...publicPart, alg: SIGNING_ALG, use: "sig" });
  }
  const first = jwks[0]!;
  const signingKey = (await importJWK({ ...first, alg: SIGNING_ALG }, SIGNING_ALG)) as CryptoKey;
  const publicJwks = { keys: publicKeys };
  const urlSigningKeys = await Promise.all(jwks.map((jwk) => deriveHmacKey(jwk.d!, "dqs download url v1")));
  const cursorKeys = await Promise.all(jwks.map((jwk) => deriveHmacKey(jwk.d!, "dqs rows cursor v1")));
  return {
    signingKey,
    signingKid: first.kid!,
    publicJwks,
    verificationKeys: createLocalJWKSet(publicJwks),
    urlSigningKeys,
    cursorKeys,
  };
}

/** A separate key per purpose: the JWT key never signs URLs or cursors itself (RFC 5869 HKDF with a purpose label). */
async function deriveHmacKey(privateScalar: string, purpose: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(privateScalar), "HKDF", false, [
    "deriveKey",
  ]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new TextEncoder().encode(purpose) },
    material,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign", "verify"],
  );
}

/** Generates a private signing JWK in the form SIGNING_KEYS expects. */
export async function generateSigningJwk(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomToken(12), alg: SIGNING_ALG };
}

async function devKeys(db: D1Database): Promise<string> {
  const existing = await db.prepare("SELECT jwks FROM dev_signing_keys WHERE id = 1").first<{ jwks: string }>();
  if (existing) return existing.jwks;
  const jwks = JSON.stringify([await generateSigningJwk()]);
  // Two first requests may race; the row that lands first wins for both.
  await db.prepare("INSERT OR IGNORE INTO dev_signing_keys (id, jwks) VALUES (1, ?)").bind(jwks).run();
  const row = await db.prepare("SELECT jwks FROM dev_signing_keys WHERE id = 1").first<{ jwks: string }>();
  return row!.jwks;
}
