import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { readEnvelope } from "../support/http";
import { login, type LoggedIn } from "../support/login";
import { serviceWith, stateWith, submit, TestQueue } from "../support/query";

let owner: LoggedIn;

beforeAll(async () => {
  owner = await login("q_wait");
});

interface Waited {
  QueryId: string;
  Status: string;
  FirstPage?: unknown;
}

/** Submits SQL with `Prefer: wait`; the answer's envelope and how long it took, in ms. */
async function timedSubmit(sql: string, prefer: string, via: ReturnType<typeof serviceWith>) {
  const started = Date.now();
  const response = await submit(owner.accessToken, { Sql: sql, Reuse: false }, via, { prefer });
  const body = await readEnvelope<Waited>(response, 200);
  return { body, ms: Date.now() - started, applied: response.headers.get("preference-applied") };
}

/** Resolves after `ms`, with `value`. */
function later<T>(ms: number, value: () => Promise<T>): Promise<T> {
  return new Promise((resolve) => setTimeout(resolve, ms)).then(value);
}

describe("POST /v1/query with Prefer: wait", () => {
  it("should say why a query that failed while it waited failed", async () => {
    const { body } = await timedSubmit("SELECT temp", "wait=10", serviceWith(new TestQueue({})));

    expect(body.Data.Status).toBe("failed");
    expect(body.Status.Message).toMatch(/^The query failed: .*no such column: temp\.?$/);
  });

  it("should answer within the wait when the query's Durable Object answers slowly", async () => {
    const slow = stateWith("get", (real) => () => later(5000, () => real.get()));

    const { body, ms, applied } = await timedSubmit(
      "SELECT 1",
      "wait=1",
      serviceWith(new TestQueue(), { QUERY_STATE: slow }),
    );

    expect(applied).toBe("wait=1");
    expect(body.Data.Status).toBe("queued");
    expect(body.Status.Message).toBe("The query is queued.");
    expect(ms).toBeLessThan(2000);
  });

  it("should leave out a first page that cannot be read within the wait", async () => {
    const slowBucket = new Proxy(env.BUCKET, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property);
        if (property === "get") return (...args: Parameters<R2Bucket["get"]>) => later(5000, () => target.get(...args));
        return typeof value === "function" ? value.bind(target) : value;
      },
    });

    const { body, ms } = await timedSubmit(
      "SELECT 1 AS one",
      "wait=1",
      serviceWith(new TestQueue({}), { BUCKET: slowBucket }),
    );

    expect(body.Data.Status).toBe("succeeded");
    expect(body.Data.FirstPage).toBeUndefined();
    expect(ms).toBeLessThan(2000);
  });
});
