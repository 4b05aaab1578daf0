import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// Bounded work as a user meets it on the local service (`npm run dev`): with a time limit of 10 s, a join far
// past it is refused at once from its estimate; a statement the estimate cannot see coming holds the table store
// only until the store is reset, and then fails naming the limit; a long statement in sql.js stops at the limit.
// Meanwhile another user's requests answer within a second (their SELECT 1 too, from the engine's quick lane, while
// the long lane works), and the item answers normal queries afterwards.

const LIMIT_SECONDS = 10;
// About a million rows, as a real file gets a table store.
const ROWS = 999_999;
const ITEM = "bounded.d.facts";

let server: DevServer;
let alice: string;
let bob: string;
let carol: string;

async function post(token: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return (await response.json()) as { Data: Record<string, unknown> };
}

async function statusOf(token: string, id: string): Promise<{ Status: string; Message: string }> {
  const response = await fetch(`${server.url}/v1/query/${id}/status`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return ((await response.json()) as { Data: { Status: string; Message: string } }).Data;
}

async function ended(token: string, id: string, withinMs: number): Promise<{ Status: string; Message: string }> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const status = await statusOf(token, id);
    if (!["queued", "running"].includes(status.Status) || Date.now() > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * While `busy` has not settled, times `who`'s requests, the slowest of each: the OpenAPI document; submitting
 * `SELECT 1` or reading its status (`submit`); and from submitting it to its answer (`answer`, with `Prefer:
 * wait`, not reused; 0 when `answered` is false: a store statement the estimate let through holds the quick lane).
 */
async function othersDuring(
  busy: Promise<unknown>,
  who: string,
  answered = true,
): Promise<{ submit: number; answer: number; openapi: number; samples: number }> {
  let settled = false;
  void busy.finally(() => (settled = true));
  const worst = { submit: 0, answer: 0, openapi: 0, samples: 0 };
  while (!settled) {
    let started = Date.now();
    const openapi = await fetch(`${server.url}/v1/openapi.json`);
    expect(openapi.status).toBe(200);
    worst.openapi = Math.max(worst.openapi, Date.now() - started);
    started = Date.now();
    const select = await post(
      who,
      "/v1/query",
      { Sql: "SELECT 1", Reuse: false },
      answered ? { prefer: "wait=5" } : {},
    );
    const took = Date.now() - started;
    if (answered) {
      expect(select.Data.Status).toBe("succeeded");
      worst.answer = Math.max(worst.answer, took);
    } else worst.submit = Math.max(worst.submit, took);
    started = Date.now();
    expect(["queued", "running", "succeeded"]).toContain((await statusOf(who, select.Data.QueryId as string)).Status);
    worst.submit = Math.max(worst.submit, Date.now() - started);
    worst.samples++;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return worst;
}

beforeAll(async () => {
  server = await startWranglerDev({
    QUERY_TIME_LIMIT_SECONDS: String(LIMIT_SECONDS),
    TABLE_STORE_MIN_ROWS: "1000",
    // Each overrun here cools its user down (tested in test/query/overrun-cool-down.test.ts); briefly.
    QUERY_OVERRUN_COOLDOWN_SECONDS: "1",
  });
  alice = (await httpLogin(server.url, "bounded")).accessToken;
  bob = (await httpLogin(server.url, "bounded-bob")).accessToken;
  carol = (await httpLogin(server.url, "bounded-carol")).accessToken;
  await fetch(`${server.url}/v1/dataset/bounded/d`, { method: "PUT", headers: { authorization: `Bearer ${alice}` } });
  const csv = "id,grp,amount\n" + Array.from({ length: ROWS }, (_, i) => `${i + 1},${i % 3},${i % 97}`).join("\n");
  const form = new FormData();
  form.append("Data", new Blob([csv]), "facts.csv");
  const upload = await fetch(`${server.url}/v1/data/bounded/d/facts`, {
    method: "POST",
    headers: { authorization: `Bearer ${alice}` },
    body: form,
  });
  expect(upload.status).toBe(200);
  // The first query waits for the table store's build, so later ones time the store alone.
  const first = await post(alice, "/v1/query", { Sql: `SELECT count(*) FROM ${ITEM}` });
  expect(await ended(alice, first.Data.QueryId as string, 120_000)).toMatchObject({
    Status: "succeeded",
    Engine: "store",
  });
}, 240_000);

afterAll(async () => {
  await server?.stop();
});

describe("bounded work on the local service", () => {
  it("should refuse a self-join of a million rows estimated far past the time limit within seconds, naming the estimate and the limit", async () => {
    // About 3.3 × 10^11 row pairs (grp has 3 values): hours, even at native speed.
    const sql = `SELECT count(*) FROM ${ITEM} a JOIN ${ITEM} b ON a.grp = b.grp`;
    // Validation says what the run will say: not valid, for the same reason.
    const validation = await post(alice, "/v1/query/validate", { Sql: sql });
    expect(validation.Data).toMatchObject({ Valid: false, Engine: "store" });
    expect(validation.Data.EstimatedSeconds).toBeGreaterThan(LIMIT_SECONDS);
    expect(validation.Data.Message).toMatch(/^Failed: the query would run .* past the time limit of 10 s/);

    const started = Date.now();
    const { Data } = await post(alice, "/v1/query", { Sql: sql });
    const run = ended(alice, Data.QueryId as string, 30_000);
    const others = await othersDuring(run, bob);
    const status = await run;

    expect(status.Status).toBe("failed");
    expect(status.Message).toMatch(
      new RegExp(
        `^Failed: the query would run (about|at least) [\\d.,]+ s in the table store of ${ITEM.replaceAll(".", "\\.")} .*past the time limit of ${LIMIT_SECONDS} s \\(QUERY_TIME_LIMIT_SECONDS\\)`,
      ),
    );
    expect(Date.now() - started).toBeLessThan((LIMIT_SECONDS + 10) * 1000);
    expect(others.openapi).toBeLessThan(1000);
    expect(others.submit).toBeLessThan(1000);
    expect(others.answer).toBeLessThan(1000);
  });

  it("should end a store statement the estimate let through within the limit plus 10 s, and answer others meanwhile", async () => {
    // On every sample the subquery's count is below the threshold, so the recursion ends at once; on the whole
    // item it never ends: only the store's reset stops it.
    const sql = `WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE (SELECT count(*) FROM ${ITEM}) >= ${ROWS}) SELECT count(*) FROM r`;
    const restartsBefore = server.storeRestarts();
    const started = Date.now();
    const { Data } = await post(alice, "/v1/query", { Sql: sql });
    const run = ended(alice, Data.QueryId as string, (LIMIT_SECONDS + 30) * 1000);
    const others = await othersDuring(run, bob, false);
    const status = await run;
    const tookMs = Date.now() - started;

    expect(status.Status).toBe("failed");
    expect(status.Message).toMatch(/time limit of 10 s|within the time limit/);
    expect(tookMs).toBeLessThan((LIMIT_SECONDS + 10) * 1000);
    expect(server.storeRestarts()).toBe(restartsBefore + 1);
    expect(others.samples).toBeGreaterThan(3);
    expect(others.openapi).toBeLessThan(1000);
    expect(others.submit).toBeLessThan(1000);

    // The same item answers normal queries right after (once its store is back).
    const after = await post(
      alice,
      "/v1/query",
      { Sql: `SELECT grp, count(*) FROM ${ITEM} GROUP BY grp ORDER BY grp` },
      { prefer: "wait=30" },
    );
    expect(after.Data.Status).toBe("succeeded");
    expect(await statusOf(alice, after.Data.QueryId as string)).toMatchObject({ Engine: "store" });
    expect((after.Data.FirstPage as { Rows: unknown[][] }).Rows).toEqual([
      [0, ROWS / 3],
      [1, ROWS / 3],
      [2, ROWS / 3],
    ]);
  });

  it("should stop a long statement in sql.js at the limit while another user's queries are answered", async () => {
    const sql =
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000) SELECT count(*) FROM n";
    const started = Date.now();
    const { Data } = await post(bob, "/v1/query", { Sql: sql });
    const run = ended(bob, Data.QueryId as string, (LIMIT_SECONDS + 30) * 1000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Another long query leaves the quick lane for the long one, where bob's statement holds the queue.
    const second = await post(alice, "/v1/query", {
      Sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000000) SELECT count(*) FROM n",
      Reuse: false,
    });
    // And an upload, whose build request goes to the long lane's process too.
    const form = new FormData();
    form.append("Data", new Blob(["n\n1\n2\n"]), "small.csv");
    const uploadStarted = Date.now();
    const upload = fetch(`${server.url}/v1/data/bounded/d/small-during`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice}` },
      body: form,
    }).then((response) => ({ status: response.status, ms: Date.now() - uploadStarted }));
    const others = await othersDuring(run, carol);
    const uploaded = await upload;
    const status = await run;

    expect(status).toMatchObject({ Status: "failed" });
    expect(status.Message).toMatch(/^Failed: the query ran longer than the time limit of 10 s/);
    expect(Date.now() - started).toBeLessThan((LIMIT_SECONDS + 10) * 1000);
    expect(others.samples).toBeGreaterThan(5);
    expect(others.openapi).toBeLessThan(1000);
    expect(others.answer).toBeLessThan(1000);
    expect(uploaded.status).toBe(200);
    expect(uploaded.ms).toBeLessThan(2000);
    expect(await ended(alice, second.Data.QueryId as string, 60_000)).toMatchObject({ Status: "succeeded" });
  });
});
