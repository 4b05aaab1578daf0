import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { createApp } from "../../src/worker/http/app";

/** The origin the test configuration serves (PUBLIC_URL in test/vitest.config.ts). */
export const ORIGIN = "http://dqs.test";

/** Something that answers requests like the Worker: the Worker itself, or the app under another configuration. */
export type Fetch = (request: Request) => Promise<Response>;

/** The Worker with the test configuration, reached as a client reaches it. */
export const worker: Fetch = (request) => exports.default.fetch(request);

/** The same application running with some settings changed, as another deployment would. */
export function workerWith(overrides: Partial<Env>): Fetch {
  const app = createApp();
  // One Env for every request, as a deployment's isolate has: settings are parsed once per Env.
  const changed = { ...env, ...overrides };
  return async (request) => {
    const ctx = createExecutionContext();
    const response = await app.fetch(request, changed, ctx);
    await waitOnExecutionContext(ctx);
    return response;
  };
}

/** The database with the statements whose SQL matches `pattern` failing, as D1 does when it is unavailable. */
export function dbFailing(pattern: RegExp): D1Database {
  return new Proxy(env.DB, {
    get(target, property) {
      if (property === "prepare")
        return (sql: string) => {
          if (pattern.test(sql)) throw new Error("D1 is unavailable");
          return target.prepare(sql);
        };
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Sends a request to a path of the service; redirects come back as they are, never followed. */
export function call(path: string, init: RequestInit = {}, via: Fetch = worker): Promise<Response> {
  return via(new Request(new URL(path, ORIGIN), { redirect: "manual", ...init }));
}

/** A POST with a JSON body. */
export function postJson(path: string, body: unknown, via: Fetch = worker): Promise<Response> {
  return call(
    path,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    via,
  );
}

/** The JSON envelope every non-redirect response carries (interface §2.1). */
export interface Envelope<D = undefined> {
  Status: { Code: number; Message: string };
  Data: D;
}

/** Checks that a response is the JSON envelope with the given status, Status.Code included, and returns its body. */
export async function readEnvelope<D = undefined>(response: Response, status: number): Promise<Envelope<D>> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const parsed = JSON.parse(body) as Envelope<D>;
  expect(parsed.Status.Code).toBe(status);
  expect(parsed.Status.Message).toEqual(expect.any(String));
  return parsed;
}

/** Checks a 401 with the bearer challenge and returns its message. */
export async function readUnauthorized(response: Response): Promise<string> {
  const challenge = response.headers.get("www-authenticate");
  const body = await readEnvelope(response, 401);
  expect(challenge).toMatch(/^Bearer /);
  return body.Status.Message;
}
