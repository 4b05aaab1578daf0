import { describe, expect, it } from "vitest";
import { call, postJson, readEnvelope, workerWith } from "../support/http";
import { authHeader, login } from "../support/login";

/** A limiter that lets `allowed` requests through, then refuses, counting per key. */
function limiter(allowed: number): RateLimit & { keys: string[] } {
  const counts = new Map<string, number>();
  const keys: string[] = [];
  return {
    keys,
    async limit({ key }) {
      keys.push(key);
      const used = (counts.get(key) ?? 0) + 1;
      counts.set(key, used);
      return { success: used <= allowed };
    },
  };
}

describe("rate limits", () => {
  it("should answer 429 with Retry-After once a user has used up the minute's requests", async () => {
    const { accessToken } = await login("rate-alice");
    const users = limiter(2);
    const via = workerWith({ USER_RATE_LIMITER: users });
    for (let i = 0; i < 2; i++)
      expect((await call("/v1/me/datasets", { headers: authHeader(accessToken) }, via)).status).toBe(200);
    const refused = await call("/v1/me/datasets", { headers: authHeader(accessToken) }, via);
    expect(refused.headers.get("retry-after")).toBe("60");
    const body = await readEnvelope(refused, 429);
    expect(body.Status.Message).toContain("Too many requests");
  });

  it("should count each user separately", async () => {
    const alice = await login("rate-bob");
    const bob = await login("rate-carol");
    const users = limiter(1);
    const via = workerWith({ USER_RATE_LIMITER: users });
    expect((await call("/v1/me/datasets", { headers: authHeader(alice.accessToken) }, via)).status).toBe(200);
    expect((await call("/v1/me/datasets", { headers: authHeader(bob.accessToken) }, via)).status).toBe(200);
    expect(new Set(users.keys).size).toBe(2);
  });

  it("should limit the refresh endpoint by client address", async () => {
    const via = workerWith({ AUTH_RATE_LIMITER: limiter(1) });
    const headers = { "cf-connecting-ip": "203.0.113.7" };
    const first = await call(
      "/v1/auth/token",
      { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{}" },
      via,
    );
    expect(first.status).toBe(400);
    const second = await call(
      "/v1/auth/token",
      { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{}" },
      via,
    );
    await readEnvelope(second, 429);
  });

  it("should not count requests whose token is rejected against a user", async () => {
    const users = limiter(0);
    const response = await postJson("/v1/query", { Sql: "SELECT 1" }, workerWith({ USER_RATE_LIMITER: users }));
    expect(response.status).toBe(401);
    expect(users.keys).toEqual([]);
  });
});
