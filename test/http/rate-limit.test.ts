import { describe, expect, it } from "vitest";
import { call, postJson, readEnvelope, workerWith, type Fetch } from "../support/http";
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

  describe("unauthenticated endpoints", () => {
    /** POST /v1/auth/token with an empty body (400 when let through) and the given headers. */
    function refresh(via: Fetch, headers: Record<string, string> = {}) {
      return call(
        "/v1/auth/token",
        { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{}" },
        via,
      );
    }

    it("should limit requests without CF-Connecting-IP together, as one client, whatever else they send", async () => {
      const auth = limiter(1);
      const via = workerWith({ AUTH_RATE_LIMITER: auth });

      const first = await refresh(via, { "x-real-ip": "198.51.100.1" });
      const second = await refresh(via, { "x-forwarded-for": "198.51.100.2" });
      const third = await refresh(via);

      expect(first.status).toBe(400);
      await readEnvelope(second, 429);
      await readEnvelope(third, 429);
      expect(new Set(auth.keys).size).toBe(1);
    });

    it("should ignore X-Real-IP and X-Forwarded-For beside CF-Connecting-IP", async () => {
      const via = workerWith({ AUTH_RATE_LIMITER: limiter(1) });
      const client = { "cf-connecting-ip": "203.0.113.9" };

      expect((await refresh(via, { ...client, "x-real-ip": "198.51.100.1" })).status).toBe(400);
      await readEnvelope(await refresh(via, { ...client, "x-real-ip": "198.51.100.2" }), 429);
      await readEnvelope(await refresh(via, { ...client, "x-forwarded-for": "198.51.100.3" }), 429);
    });

    it("should count different addresses separately", async () => {
      const via = workerWith({ AUTH_RATE_LIMITER: limiter(1) });

      for (const address of ["203.0.113.10", "203.0.113.11", "2001:db8:1:1::1", "2001:db8:1:2::1"])
        expect((await refresh(via, { "cf-connecting-ip": address })).status).toBe(400);
    });

    it.each([
      ["2001:db8:1:2::1", "2001:0db8:0001:0002:ffff:ffff:ffff:ffff"],
      ["2001:DB8:1:2::", "2001:db8:1:2:0:0:0:7"],
      ["2001:db8::1", "2001:db8:0:0:1::"],
      ["::ffff:192.0.2.1", "192.0.2.1"],
    ])("should count %s and %s as one client", async (first, second) => {
      const via = workerWith({ AUTH_RATE_LIMITER: limiter(1) });

      expect((await refresh(via, { "cf-connecting-ip": first })).status).toBe(400);
      await readEnvelope(await refresh(via, { "cf-connecting-ip": second }), 429);
    });

    it("should not count IPv4-mapped addresses as one /64", async () => {
      const via = workerWith({ AUTH_RATE_LIMITER: limiter(1) });

      for (const address of ["::ffff:192.0.2.1", "::ffff:192.0.2.2"])
        expect((await refresh(via, { "cf-connecting-ip": address })).status).toBe(400);
    });

    it.each(["", "not-an-address", "1.2.3", "1:2:3:4:5:6:7:8:9", "1::2::3", "g::1"])(
      "should count the unreadable address '%s' with the clients of unknown address",
      async (address) => {
        const auth = limiter(1);
        const via = workerWith({ AUTH_RATE_LIMITER: auth });

        expect((await refresh(via)).status).toBe(400);
        await readEnvelope(await refresh(via, { "cf-connecting-ip": address }), 429);
      },
    );
  });

  it("should not count requests whose token is rejected against a user, and count those it accepts", async () => {
    const { accessToken } = await login("rate-dave");
    const users = limiter(0);
    const via = workerWith({ USER_RATE_LIMITER: users });

    const rejected = await postJson("/v1/query", { Sql: "SELECT 1" }, via);
    expect(rejected.status).toBe(401);
    expect(users.keys).toEqual([]);

    // The same limiter refuses the first accepted request: the 429 can only come from the limit.
    const limited = await call("/v1/me/datasets", { headers: authHeader(accessToken) }, via);
    await readEnvelope(limited, 429);
    expect(users.keys).toHaveLength(1);
  });
});
