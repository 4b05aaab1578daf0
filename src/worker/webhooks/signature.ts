const encoder = new TextEncoder();
const SECRET_PREFIX = "whsec_";

/** A new signing secret as Standard Webhooks writes one: "whsec_" and base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + base64(crypto.getRandomValues(new Uint8Array(32)));
}

/**
 * The `webhook-signature` header of Standard Webhooks: "v1," and the base64
 * HMAC-SHA256 of `id.timestamp.body` under each secret (its bytes are the
 * base64 after "whsec_"), separated by spaces; a receiver accepts any one.
 */
export async function webhookSignature(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string,
): Promise<string> {
  const content = encoder.encode(`${id}.${timestamp}.${body}`);
  const signatures = await Promise.all(
    secrets.map(async (secret) => {
      const key = await crypto.subtle.importKey("raw", secretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, [
        "sign",
      ]);
      return `v1,${base64(new Uint8Array(await crypto.subtle.sign("HMAC", key, content)))}`;
    }),
  );
  return signatures.join(" ");
}

function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Uint8Array.from(atob(encoded), (char) => char.charCodeAt(0));
}

/** Padded base64 (RFC 4648 §4), as the Standard Webhooks secrets and signatures use. */
function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
