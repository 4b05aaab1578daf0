import { describe, expect, it } from "vitest";
import { DqsClient, DqsNetworkError, DqsQueryError, type FetchLike, type QueryState } from "../../src/sdk";
import { json, statusOf, unexpiredTokens } from "./support";

/**
 * A scripted stand-in for the query endpoints: each status request answers
 * the next state of the script (the last one repeats), so the SDK's waiting
 * can be checked without depending on how fast a real query runs.
 */
function scriptedService(states: QueryState[]): { fetch: FetchLike; submits: Request[]; polls: number[] } {
  const submits: Request[] = [];
  const polls: number[] = [];
  const status = (state: QueryState) =>
    statusOf(state, state === "failed" ? "Failed: no such table" : `The query is ${state}.`);

  const fetch: FetchLike = async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/v1/query") {
      submits.push(request);
      return json({ Status: { Code: 200, Message: "queued" }, Data: { QueryId: "q1" } });
    }
    if (path === "/v1/query/q1/status") {
      polls.push(Date.now());
      const state = states[Math.min(polls.length - 1, states.length - 1)]!;
      return json({ Status: { Code: 200, Message: "OK" }, Data: status(state) });
    }
    return new Response(null, { status: 500 });
  };
  return { fetch, submits, polls };
}

const tokens = unexpiredTokens();

function client(fetch: FetchLike): DqsClient {
  return new DqsClient({ baseUrl: "http://dqs.test", tokens, fetch });
}

describe("waiting for a query", () => {
  it("should poll with growing pauses until the query ends, reporting each status", async () => {
    const service = scriptedService(["queued", "running", "running", "running", "succeeded"]);
    const seen: QueryState[] = [];

    const status = await client(service.fetch).runQuery("SELECT 1", { onStatus: (s) => seen.push(s.Status) });

    expect(status.Status).toBe("succeeded");
    expect(seen).toEqual(["queued", "running", "running", "running", "succeeded"]);
    const pauses = service.polls.slice(1).map((t, i) => t - service.polls[i]!);
    expect(pauses[0]).toBeGreaterThanOrEqual(150);
    expect(pauses.at(-1)!).toBeGreaterThan(pauses[0]!);
  });

  it("should submit with an Idempotency-Key and Prefer: wait", async () => {
    const service = scriptedService(["succeeded"]);

    await client(service.fetch).runQuery("SELECT 1");

    const [submit] = service.submits;
    expect(submit?.headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
    expect(submit?.headers.get("prefer")).toBe("wait=2");
    expect(await submit?.json()).toEqual({ Sql: "SELECT 1" });
  });

  it("should stop waiting after `wait` seconds with a timeout error that names the query", async () => {
    const service = scriptedService(["running"]);

    const error = (await client(service.fetch)
      .waitForQuery("q1", { wait: 0.6 })
      .catch((e: unknown) => e)) as DqsQueryError;

    expect(error).toBeInstanceOf(DqsQueryError);
    expect(error.reason).toBe("timeout");
    expect(error.queryId).toBe("q1");
    expect(error.message).toContain("still running after 0.6 s");
  });

  it.each([
    ["failed", "Query q1 failed: no such table"],
    ["cancelled", "Query q1 cancelled: The query is cancelled."],
  ] as const)("should throw a DqsQueryError when the query %s", async (state, message) => {
    const service = scriptedService(["running", state]);

    const error = (await client(service.fetch)
      .waitForQuery("q1")
      .catch((e: unknown) => e)) as DqsQueryError;

    expect(error).toMatchObject({ name: "DqsQueryError", reason: state, message });
  });

  it("should stop when its signal aborts", async () => {
    const service = scriptedService(["running"]);
    const abort = new AbortController();
    setTimeout(() => abort.abort(new Error("stopped")), 300);

    await expect(client(service.fetch).waitForQuery("q1", { signal: abort.signal })).rejects.toThrow("stopped");
  });
});

describe("a service that cannot be reached", () => {
  it("should throw a DqsNetworkError naming the service's origin and the reason", async () => {
    const refused: FetchLike = async () => {
      throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    };

    const error = await client(refused)
      .accountDatasets("alice")
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(DqsNetworkError);
    expect((error as DqsNetworkError).message).toBe("Cannot reach the service at http://dqs.test: ECONNREFUSED");
  });

  it("should let other errors of the fetch through as they are", async () => {
    const broken: FetchLike = async () => {
      throw new RangeError("something else");
    };

    await expect(client(broken).accountDatasets("alice")).rejects.toThrow(RangeError);
  });
});
