import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchBrowser } from "./support/browser";
import { buildCli, runCli, temporaryHome, type CliResult } from "./support/cli-run";
import { person, signIn, type Person } from "./support/console";
import { httpLogin } from "./support/http-login";
import { COUNTING_SQL, statusUntil } from "./support/long-query";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// Every wait a client asks for is kept, whatever the query does (issue "Bounded work"): Prefer: wait=N on
// the API, `dqs query --wait N` on the command line, and the console's Cancel from the moment of Run. The
// long query counts until it is cancelled; each test cancels its own, as the local queue runs one at a time.

let server: DevServer;
let browser: Browser | undefined;

beforeAll(async () => {
  // A backstop only: every test cancels its query long before this.
  server = await startWranglerDev({ QUERY_TIME_LIMIT_SECONDS: "60" });
  if (hasChromium || process.env.CI) browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** A client of the API as one account: its bearer requests, as JSON. */
async function apiAs(account: string) {
  const { accessToken } = await httpLogin(server.url, account);
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.url}/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      response,
      body: (await response.json()) as { Status: { Message: string }; Data: Record<string, unknown> },
    };
  };
  /** Cancels a query and waits until it has ended, so that the engine is free for the next test's. */
  const cancelled = async (queryId: string) => {
    await request("POST", `/query/${queryId}/cancel`);
    const status = await statusUntil(
      async () => (await request("GET", `/query/${queryId}/status`)).body.Data as { Status: string },
      (s) => s.Status !== "queued" && s.Status !== "running",
    );
    expect(status.Status).toBe("cancelled");
  };
  return { request, cancelled };
}

describe("POST /v1/query with Prefer: wait", () => {
  it("should answer within the wait while the query still runs, and say why a query failed", async () => {
    const api = await apiAs("e2e-waits-http");

    const started = Date.now();
    const { response, body } = await api.request(
      "POST",
      "/query",
      { Sql: COUNTING_SQL, Reuse: false },
      { prefer: "wait=2" },
    );
    const elapsed = Date.now() - started;
    const queryId = body.Data.QueryId as string;
    await api.cancelled(queryId);
    const failed = await api.request("POST", "/query", { Sql: "SELECT temp", Reuse: false }, { prefer: "wait=10" });

    expect(response.headers.get("preference-applied")).toBe("wait=2");
    expect(body.Data.Status).toMatch(/^(queued|running)$/);
    expect(body.Status.Message).toMatch(/^The query is (queued|running)\.$/);
    expect(elapsed).toBeLessThan(3000);
    expect(failed.body.Data.Status).toBe("failed");
    expect(failed.body.Status.Message).toMatch(/^The query failed: .*no such column: temp/);
  });
});

describe("dqs query --wait", () => {
  let cli: string;
  let home: string;
  const dqs = (args: string[], stdin?: string): Promise<CliResult> =>
    runCli(cli, args, { home, env: { DQS_URL: server.url }, stdin });
  /** Runs `dqs` and how long it took, from its start to its exit. */
  const timed = async (args: string[]) => {
    const started = Date.now();
    const result = await dqs(args);
    return { result, elapsed: Date.now() - started };
  };

  beforeAll(async () => {
    cli = buildCli();
    home = temporaryHome();
    const { refreshToken } = await httpLogin(server.url, "e2e-waits-cli");
    expect((await dqs(["login", "--no-browser"], `${refreshToken}\n`)).code).toBe(0);
  }, 120_000);

  it("should return within the wait, saying the query still runs, its id and how to follow it, with exit code 5", async () => {
    const { result, elapsed } = await timed(["query", COUNTING_SQL, "--wait", "2"]);
    const id = /Query (\S+) is still/.exec(result.stderr)?.[1];
    if (id) await dqs(["cancel", id]);

    expect(result.code, result.stderr).toBe(5);
    expect(id).toMatch(/^[\w-]{22}$/);
    expect(result.stderr).toContain(
      `dqs: Query ${id} is still running after 2 s; it goes on: follow it with dqs status ${id} (stop it with dqs cancel ${id}).\n`,
    );
    expect(result.stdout).toBe("");
    expect(elapsed).toBeLessThan(3000);
  });

  it("should say the same in JSON with --json", async () => {
    const { result, elapsed } = await timed(["query", COUNTING_SQL, "--wait", "2", "--json"]);
    const printed = JSON.parse(result.stdout || "{}") as { QueryId?: string; Status?: string; Message?: string };
    if (printed.QueryId) await dqs(["cancel", printed.QueryId]);

    expect(result.code, result.stderr).toBe(5);
    expect(printed).toEqual({
      QueryId: expect.stringMatching(/^[\w-]{22}$/),
      Status: expect.stringMatching(/^(queued|running)$/),
      Message: expect.stringContaining(`follow it with dqs status ${printed.QueryId}`),
    });
    expect(elapsed).toBeLessThan(3000);
  });

  it("should exit 4 with the reason when the query fails", async () => {
    const { result } = await timed(["query", "SELECT temp", "--wait", "20"]);

    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^dqs: Query \S+ failed: .*no such column: temp/m);
  });

  it("should document exit code 5 in its help", async () => {
    const help = await dqs(["query", "--help"]);

    expect(help.stdout).toMatch(/5 it was still running when\s+--wait ran out/);
  });
});

(hasChromium || process.env.CI ? describe : describe.skip)("the console's Cancel", () => {
  let who: Person;

  beforeAll(async () => {
    who = await person(browser!, "e2e-waits-web");
  });

  it("should sign in and open the SQL page with the long query", async () => {
    await signIn(who, server.url);
    await who.page.getByRole("link", { name: "SQL", exact: true }).click();
    await who.page.locator(".cm-content").click();
    await who.page.keyboard.insertText(COUNTING_SQL);
  });

  afterAll(async () => {
    await who?.context.close();
  });

  const cancelButton = () => who.page.getByRole("button", { name: "Cancel" });

  it("should show Cancel at Run, before the submit has answered, and cancel the query once it has", async () => {
    // The submit is held in the browser for a while, so the click lands before the QueryId is known.
    await who.page.route(`${server.url}/v1/query`, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await route.continue();
    });
    try {
      await who.page.keyboard.press("Control+Enter");
      await cancelButton().click({ timeout: 1000 });
      await who.page.locator(".query-state.cancelled").waitFor({ timeout: 30_000 });
    } finally {
      await who.page.unroute(`${server.url}/v1/query`);
    }
  });

  it("should show Cancel right after Run, show the query running, and cancel it", async () => {
    await who.page.locator(".cm-content").click();
    const started = Date.now();
    await who.page.keyboard.press("Control+Enter");
    await cancelButton().waitFor({ timeout: 1000 });
    const shown = Date.now() - started;
    await who.page.locator(".query-state.running").waitFor({ timeout: 3000 });
    await cancelButton().click();
    await who.page.locator(".query-state.cancelled").waitFor({ timeout: 30_000 });

    expect(shown).toBeLessThan(1000);
    expect(who.problems).toEqual([]);
  });
});
