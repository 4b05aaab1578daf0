import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ConfigError, requestConfig, settings } from "../src/worker/config";

/** An Env that counts how often each setting is read. */
function countingEnv(overrides: Partial<Env> = {}): { env: Env; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const counted = new Proxy({ ...env, ...overrides } as Env, {
    get(target, name, receiver) {
      if (typeof name === "string") reads.set(name, (reads.get(name) ?? 0) + 1);
      return Reflect.get(target, name, receiver);
    },
  });
  return { env: counted, reads };
}

describe("settings", () => {
  it("should read and check an Env's settings once, however often they are asked for", () => {
    const { env: counted, reads } = countingEnv();

    const first = settings(counted);
    const readsAfterFirst = new Map(reads);
    const again = settings(counted);
    requestConfig(counted, "http://elsewhere.test/v1/x");

    expect(again).toBe(first);
    expect(reads).toEqual(readsAfterFirst);
    expect(reads.get("MAX_SQL_LENGTH")).toBe(1);
  });

  it("should parse another Env on its own", () => {
    const changed = { ...env, QUERY_MAX_RESULT_ROWS: "7", COLUMN_IMAGES: "build" };

    expect(settings(changed).query.maxResultRows).toBe(7);
    expect(settings(changed).columnImages).toBe(true);
    expect(settings(env).query.maxResultRows).toBe(Number(env.QUERY_MAX_RESULT_ROWS));
    expect(settings(env).columnImages).toBe(false);
  });

  it.each<[string, Partial<Env>, string]>([
    ["an empty TERMS_VERSION", { TERMS_VERSION: " " }, "TERMS_VERSION is empty"],
    ["a zero limit", { MAX_SQL_LENGTH: "0" }, "MAX_SQL_LENGTH must be a positive integer"],
    [
      "a limit that is not a number",
      { QUERY_MAX_LOAD_BYTES: "lots" },
      "QUERY_MAX_LOAD_BYTES must be a positive integer",
    ],
    ["an unknown COLUMN_IMAGES", { COLUMN_IMAGES: "sometimes" }, 'COLUMN_IMAGES must be "build" or "off"'],
    ["production without a provider", { ENVIRONMENT: "production", OIDC_ISSUER: "" }, "OIDC_ISSUER is not set"],
    [
      "a provider without its secret",
      { OIDC_ISSUER: "https://idp.test", OIDC_CLIENT_SECRET: "" },
      "OIDC_CLIENT_SECRET",
    ],
  ])("should refuse %s, naming the setting, every time it is asked", (_case, overrides, message) => {
    const bad = { ...env, ...overrides };

    for (let i = 0; i < 2; i++) {
      expect(() => settings(bad)).toThrow(ConfigError);
      expect(() => settings(bad)).toThrow(message);
    }
  });
});

describe("requestConfig", () => {
  it("should use PUBLIC_URL, without a trailing slash, whatever the request's origin", () => {
    const configured = { ...env, PUBLIC_URL: "https://dqs.example.com/" };

    expect(requestConfig(configured, "http://localhost:8787/v1/me").publicUrl).toBe("https://dqs.example.com");
  });

  it("should use each request's own origin when PUBLIC_URL is empty", () => {
    const unset = { ...env, PUBLIC_URL: "" };

    expect(settings(unset).publicUrl).toBeNull();
    expect(requestConfig(unset, "http://localhost:8787/v1/me").publicUrl).toBe("http://localhost:8787");
    expect(requestConfig(unset, "https://other.test/v1/me").publicUrl).toBe("https://other.test");
  });
});
