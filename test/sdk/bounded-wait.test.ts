import { describe, expect, it } from "vitest";
import { DqsClient, DqsNetworkError, DqsQueryError, type FetchLike } from "../../src/sdk";
import { json, statusOf, unexpiredTokens } from "./support";

const tokens = unexpiredTokens();

const running = statusOf("running", "Running: executing the query.");

/** An answer that never comes: the request waits until its signal aborts it, as a stalled service's would. */
function never(request: Request): Promise<Response> {
  return new Promise((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason)));
}

/** A service whose submit and status requests answer as `answer` says; records the submits' Prefer headers. */
function service(answer: { submit?: "stall"; statuses?: ("running" | "stall")[] }) {
  const prefers: (string | null)[] = [];
  let polls = 0;
  const fetch: FetchLike = async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/v1/query") {
      prefers.push(request.headers.get("prefer"));
      if (answer.submit === "stall") return never(request);
      return json({ Status: { Code: 200, Message: "The query is running." }, Data: { QueryId: "q1" } });
    }
    const script = answer.statuses ?? ["running"];
    const next = script[Math.min(polls++, script.length - 1)];
    if (next === "stall") return never(request);
    return json({ Status: { Code: 200, Message: "OK" }, Data: running });
  };
  return { client: new DqsClient({ baseUrl: "http://dqs.test", tokens, fetch }), prefers };
}

/** How a promise settled, and after how many ms. */
async function timed(work: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const error = await work.then(
    () => null,
    (caught: unknown) => caught,
  );
  return { error, ms: Date.now() - started };
}

describe("waiting no longer than asked", () => {
  it("should give up on a status request still unanswered when the wait ends, naming the query", async () => {
    const { client } = service({ statuses: ["running", "stall"] });

    const { error, ms } = await timed(client.waitForQuery("q1", { wait: 0.8 }));

    expect(error).toBeInstanceOf(DqsQueryError);
    expect(error).toMatchObject({ reason: "timeout", queryId: "q1", query: { Status: "running" } });
    expect((error as Error).message).toBe("Query q1 is still running after 0.8 s; ask again with its id.");
    expect(ms).toBeLessThan(1300);
  });

  it("should name the query even when no status could be read before the wait ended", async () => {
    const { client } = service({ statuses: ["stall"] });

    const { error, ms } = await timed(client.runQuery("SELECT 1", { wait: 0.5 }));

    expect(error).toMatchObject({ name: "DqsQueryError", reason: "timeout", queryId: "q1", query: null });
    expect(ms).toBeLessThan(1000);
  });

  it("should give up on a submit still unanswered when the wait ends", async () => {
    const { client } = service({ submit: "stall" });

    const { error, ms } = await timed(client.runQuery("SELECT 1", { wait: 0.5 }));

    expect(error).toBeInstanceOf(DqsNetworkError);
    expect((error as Error).message).toBe(
      "Cannot reach the service at http://dqs.test: the submit was not answered within 0.5 s",
    );
    expect(ms).toBeLessThan(1000);
  });

  it("should ask the service to hold the submit at most the wait less a second", async () => {
    const asked: (string | null)[] = [];
    for (const wait of [1, 2, 5]) {
      const { client, prefers } = service({ statuses: ["stall"] });
      const stop = new AbortController();
      setTimeout(() => stop.abort(new Error("enough")), 100);
      await client.runQuery("SELECT 1", { wait, signal: stop.signal }).catch(() => undefined);
      asked.push(prefers[0] ?? null);
    }

    expect(asked).toEqual([null, "wait=1", "wait=2"]);
  });
});
