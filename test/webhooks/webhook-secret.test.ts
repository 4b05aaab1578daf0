import { env } from "cloudflare:workers";
import { decodeJwt } from "jose";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { signingSecrets } from "../../src/worker/webhooks/secrets";
import { newWebhookSecret, webhookSignature } from "../../src/worker/webhooks/signature";
import { call, readEnvelope, readUnauthorized } from "../support/http";
import { authHeader, login } from "../support/login";

const SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]{43}=$/;

async function getSecret(token: string): Promise<{ secret: string; response: Response }> {
  const response = await call("/v1/me/webhook-secret", { headers: authHeader(token) });
  const body = await readEnvelope<{ Secret: string }>(response.clone(), 200);
  return { secret: body.Data.Secret, response };
}

async function rotate(token: string): Promise<{ secret: string; message: string; response: Response }> {
  const response = await call("/v1/me/webhook-secret/rotate", { method: "POST", headers: authHeader(token) });
  const body = await readEnvelope<{ Secret: string }>(response.clone(), 200);
  return { secret: body.Data.Secret, message: body.Status.Message, response };
}

function userIdOf(token: string): string {
  return String(decodeJwt(token).sub);
}

describe("webhook signatures", () => {
  it("should make secrets of 32 random bytes in the Standard Webhooks form", () => {
    const secrets = [newWebhookSecret(), newWebhookSecret()];

    for (const secret of secrets) {
      expect(secret).toMatch(SECRET_FORMAT);
      expect(atob(secret.slice("whsec_".length))).toHaveLength(32);
    }
    expect(secrets[0]).not.toBe(secrets[1]);
  });

  it("should sign so that the standardwebhooks library verifies the body, and nothing changed", async () => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({ QueryId: "q1", Status: "succeeded", Message: "Succeeded: 1 rows, 4 bytes. ✓" });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      "webhook-id": "q1",
      "webhook-timestamp": String(timestamp),
      "webhook-signature": await webhookSignature([secret], "q1", timestamp, body),
    };

    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    // The library signs the same bytes the same way.
    expect(headers["webhook-signature"]).toBe(new Webhook(secret).sign("q1", new Date(timestamp * 1000), body));
    expect(() => new Webhook(secret).verify(body.replace("q1", "q2"), headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, "webhook-id": "q2" })).toThrow();
    expect(() =>
      new Webhook(secret).verify(body, { ...headers, "webhook-timestamp": String(timestamp + 1) }),
    ).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });

  it("should list one signature per secret, each verifiable on its own", async () => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
    const body = '{"QueryId":"q1"}';
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = await webhookSignature([current, previous], "q1", timestamp, body);
    const headers = { "webhook-id": "q1", "webhook-timestamp": String(timestamp), "webhook-signature": signature };

    expect(signature.split(" ")).toHaveLength(2);
    expect(new Webhook(current).verify(body, headers)).toEqual({ QueryId: "q1" });
    expect(new Webhook(previous).verify(body, headers)).toEqual({ QueryId: "q1" });
  });
});

describe("GET /v1/me/webhook-secret and POST /v1/me/webhook-secret/rotate", () => {
  it("should create the secret on first use and answer the same one after, never cached", async () => {
    const user = await login("hook_secret_get");

    const first = await getSecret(user.accessToken);
    const second = await getSecret(user.accessToken);

    expect(first.secret).toMatch(SECRET_FORMAT);
    expect(second.secret).toBe(first.secret);
    expect(first.response.headers.get("cache-control")).toBe("no-store");
    expect(await signingSecrets(env.DB, userIdOf(user.accessToken))).toEqual([first.secret]);
  });

  it("should give each user a secret of their own", async () => {
    const [alice, bob] = await Promise.all([login("hook_secret_a"), login("hook_secret_b")]);

    const secrets = await Promise.all([getSecret(alice.accessToken), getSecret(bob.accessToken)]);

    expect(secrets[0].secret).not.toBe(secrets[1].secret);
  });

  it("should keep one secret when the first uses come at once", async () => {
    const user = await login("hook_secret_race");

    const answers = await Promise.all([1, 2, 3, 4].map(() => getSecret(user.accessToken)));

    expect(new Set(answers.map((answer) => answer.secret)).size).toBe(1);
  });

  it("should rotate to a new secret, answered from then on, and sign with the old one too for a day", async () => {
    const user = await login("hook_secret_rotate");
    const before = await getSecret(user.accessToken);

    const rotated = await rotate(user.accessToken);
    const after = await getSecret(user.accessToken);

    expect(rotated.secret).toMatch(SECRET_FORMAT);
    expect(rotated.secret).not.toBe(before.secret);
    expect(rotated.message).toMatch(/old secret too for 24 hours/);
    expect(rotated.response.headers.get("cache-control")).toBe("no-store");
    expect(after.secret).toBe(rotated.secret);
    const userId = userIdOf(user.accessToken);
    expect(await signingSecrets(env.DB, userId)).toEqual([rotated.secret, before.secret]);

    // A day and a second later only the new secret signs.
    await env.DB.prepare("UPDATE webhook_secrets SET rotated_at = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 86_401_000).toISOString().replace(/\.\d{3}Z$/, "Z"), userId)
      .run();
    expect(await signingSecrets(env.DB, userId)).toEqual([rotated.secret]);
  });

  it("should create a secret when the first call is a rotation", async () => {
    const user = await login("hook_secret_rotate_first");

    const rotated = await rotate(user.accessToken);

    expect(rotated.secret).toMatch(SECRET_FORMAT);
    expect((await getSecret(user.accessToken)).secret).toBe(rotated.secret);
    expect(await signingSecrets(env.DB, userIdOf(user.accessToken))).toEqual([rotated.secret]);
  });

  it("should answer 401 without a valid access token", async () => {
    expect(await readUnauthorized(await call("/v1/me/webhook-secret"))).toMatch(/token/i);
    expect(await readUnauthorized(await call("/v1/me/webhook-secret/rotate", { method: "POST" }))).toMatch(/token/i);
  });
});
