import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { call, postJson, readEnvelope, workerWith } from "../support/http";
import { authHeader, login } from "../support/login";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("unknown paths", () => {
  it("should answer 404 in the envelope for an unknown path under /v1", async () => {
    const body = await readEnvelope(await call("/v1/no-such-thing"), 404);

    expect(body.Status.Message).toBe(
      "No such endpoint: GET /v1/no-such-thing. The API is described at /v1/openapi.json.",
    );
  });

  it("should answer 404 in the envelope outside /v1 too", async () => {
    await readEnvelope(await call("/favicon.ico"), 404);
    await readEnvelope(await call("/v2/me/datasets"), 404);
  });

  it("should answer 404 for a path that only extends a real one", async () => {
    await readEnvelope(await call("/v1/me/datasets/extra"), 404);
  });
});

describe("wrong methods", () => {
  it.each([
    ["DELETE", "/v1/auth", "GET, HEAD"],
    ["POST", "/v1/me/datasets", "GET, HEAD"],
  ])("should answer %s %s with 405 and Allow: %s", async (method, path, allow) => {
    const response = await call(path, { method });

    const body = await readEnvelope(response, 405);
    expect(response.headers.get("allow")).toBe(allow);
    expect(body.Status.Message).toContain(`Method ${method} is not allowed`);
    // Like every response: the request id and the security headers.
    expect(response.headers.get("x-request-id")).toBeTruthy();
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("should answer GET /v1/auth/token with 405 and Allow: POST", async () => {
    const response = await call("/v1/auth/token");

    await readEnvelope(response, 405);
    expect(response.headers.get("allow")).toBe("POST");
  });

  it("should answer PUT /v1/auth/logout with 405 and Allow: POST", async () => {
    const response = await call("/v1/auth/logout", { method: "PUT" });

    await readEnvelope(response, 405);
    expect(response.headers.get("allow")).toBe("POST");
  });

  it("should answer 404, not 405, for an unknown path whatever the method", async () => {
    await readEnvelope(await call("/v1/no-such-thing", { method: "POST" }), 404);
  });
});

describe("request bodies", () => {
  it("should answer 400 for malformed JSON", async () => {
    const response = await call("/v1/auth/token", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"RefreshToken": ',
    });

    const body = await readEnvelope(response, 400);
    expect(body.Status.Message).toMatch(/JSON/);
  });

  it.each(["text/plain", "application/x-www-form-urlencoded", null])(
    "should answer 415 saying what to send for a JSON body sent as %s",
    async (contentType) => {
      const response = await call("/v1/auth/token", {
        method: "POST",
        headers: contentType ? { "content-type": contentType } : {},
        body: JSON.stringify({ RefreshToken: "x" }),
      });

      const body = await readEnvelope(response, 415);
      expect(body.Status.Message).toBe("Send the body as JSON, with the header Content-Type: application/json.");
    },
  );

  it("should answer 400 naming a missing field", async () => {
    const body = await readEnvelope(await postJson("/v1/auth/token", {}), 400);

    expect(body.Status.Message).toMatch(/^Invalid request: RefreshToken: /);
  });

  it("should answer 400 naming a field of the wrong type", async () => {
    const body = await readEnvelope(await postJson("/v1/auth/token", { RefreshToken: 42 }), 400);

    expect(body.Status.Message).toMatch(/RefreshToken: .*string/i);
  });

  it("should answer 400 for an empty field", async () => {
    const body = await readEnvelope(await postJson("/v1/auth/token", { RefreshToken: "" }), 400);

    expect(body.Status.Message).toMatch(/RefreshToken/);
  });
});

describe("X-Request-Id", () => {
  it("should be on every kind of response", async () => {
    const { accessToken } = await login("envelope-request-id");
    const responses = [
      await call("/v1/openapi.json"),
      await call("/v1/docs"),
      await call("/v1/auth"),
      await call("/v1/me/datasets", { headers: authHeader(accessToken) }),
      await call("/v1/me/datasets"),
      await call("/v1/nothing"),
      await call("/v1/auth", { method: "DELETE" }),
      await postJson("/v1/auth/token", {}),
      await call("/.well-known/jwks.json"),
      await call("/idp/jwks"),
    ];

    const ids = responses.map((response) => response.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(/^[\w-]{8,}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it.each(["client-chosen-id-123", "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "x"])(
    "should make its own id when the client sends X-Request-Id %s, never echo the client's",
    async (clientId) => {
      const first = await call("/v1/openapi.json", { headers: { "x-request-id": clientId } });
      const second = await call("/v1/openapi.json", { headers: { "x-request-id": clientId } });

      const ids = [first, second].map((response) => response.headers.get("x-request-id"));
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(ids).not.toContain(clientId);
      expect(ids[0]).not.toBe(ids[1]);
    },
  );

  it("should log the client's X-Request-Id beside its own on an error", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});

    const response = await call(
      "/v1/auth",
      { headers: { "x-request-id": "client-trace-42" } },
      workerWith({ TERMS_VERSION: "" }),
    );

    const ownId = response.headers.get("x-request-id");
    expect((await readEnvelope(response, 500)).Status.Message).toContain(ownId);
    expect(ownId).not.toBe("client-trace-42");
    const logged = JSON.parse(String(log.mock.calls[0]?.[0])) as Record<string, unknown>;
    expect(logged).toMatchObject({ requestId: ownId, clientRequestId: "client-trace-42" });
  });
});

describe("unexpected errors", () => {
  function silenceErrorLog(): MockInstance<typeof console.error> {
    return vi.spyOn(console, "error").mockImplementation(() => {});
  }

  it("should answer 500 with a generic message naming the request id", async () => {
    const log = silenceErrorLog();

    const response = await call("/v1/auth", {}, workerWith({ TERMS_VERSION: "" }));

    const body = await readEnvelope(response, 500);
    const requestId = response.headers.get("x-request-id");
    expect(requestId).toBeTruthy();
    expect(body).toEqual({
      Status: { Code: 500, Message: `Internal error; if it persists, report request id ${requestId}.` },
    });
    expect(log).toHaveBeenCalledOnce();
  });

  it("should keep the cause and the stack out of the response, and log them with the request id", async () => {
    const log = silenceErrorLog();

    const response = await call("/.well-known/jwks.json", {}, workerWith({ SIGNING_KEYS: "{not json" }));

    const text = await response.text();
    expect(response.status).toBe(500);
    for (const detail of ["SIGNING_KEYS", "ConfigError", "JSON", "stack", ".ts", "  at "])
      expect(text).not.toContain(detail);
    const logged = String(log.mock.calls[0]?.[0]);
    expect(logged).toContain(response.headers.get("x-request-id"));
    expect(logged).toContain("SIGNING_KEYS is not JSON");
  });

  it("should answer a misconfigured deployment's every endpoint with the generic 500", async () => {
    silenceErrorLog();
    const misconfigured = workerWith({ TERMS_VERSION: " " });

    for (const path of ["/v1/auth", "/v1/me/datasets", "/v1/openapi.json", "/v1/no-such-thing"])
      expect((await readEnvelope(await call(path, {}, misconfigured), 500)).Status.Message).toMatch(/^Internal error/);
  });

  it("should answer 503 with Retry-After when storage was locked for a moment, as a local state shared by processes can be", async () => {
    const { accessToken } = await login("envelope-busy");
    const locked = new Error("D1_ERROR: database is locked: SQLITE_BUSY");
    const busyDb = new Proxy(env.DB, {
      get: (target, property) =>
        property === "prepare"
          ? () => ({ bind: () => busyStatement(locked), ...busyStatement(locked) })
          : Reflect.get(target, property),
    });

    const response = await call("/v1/me/datasets", { headers: authHeader(accessToken) }, workerWith({ DB: busyDb }));

    const body = await readEnvelope(response, 503);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(body.Status.Message).toMatch(/^The service's storage was busy; send the request again \(request id .+\)\.$/);
  });
});

function busyStatement(error: Error) {
  const fail = () => Promise.reject(new Error("D1_ERROR: a call failed", { cause: error }));
  return { first: fail, all: fail, run: fail, raw: fail };
}
