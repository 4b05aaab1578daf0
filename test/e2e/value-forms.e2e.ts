import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchBrowser } from "./support/browser";
import { person, signIn, type Person } from "./support/console";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// Issue 24, §2 and §5, as a new user meets them on `wrangler dev`: a file
// whose timestamps are written with a space or a T, with a zone or without,
// and whose text has quoted "" beside unquoted empty fields. Timestamps
// must compare as written and with SQLite's datetime(); "" must stay apart
// from NULL in the result CSV and the JSON rows; in sql.js and in a table
// store alike; and the console's grid must show the two apart.

const ACCOUNT = "e2e-forms";
const DATASET = "vega";
/** Items with this many rows or more are queried in a table store. */
const STORE_MIN_ROWS = 40;

const ROWS = [
  '1,2001-01-02 00:00:00,"",1',
  "2,2001-01-02T23:59:59Z,,",
  // 20:30 at UTC-5 is 01:30 the next day in UTC.
  '3,2001-01-02T20:30:00-05:00,x,""',
  '4,2001-01-01 23:59:59.500,"a ""b""",4',
  "5,,y,5",
];
const SMALL = ["id,at,name,n", ...ROWS].join("\n") + "\n";
/** The same rows and enough others (ids from 101, years later) for a table store. */
const LARGE =
  [
    "id,at,name,n",
    ...ROWS,
    ...Array.from({ length: STORE_MIN_ROWS }, (_, i) => `${101 + i},2030-01-01 00:00,z,0`),
  ].join("\n") + "\n";

let server: DevServer;
let token: string;

async function api(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
  });
}

async function upload(name: string, csv: string): Promise<string> {
  const form = new FormData();
  form.append("Data", new Blob([csv]), name);
  const response = await api(`/v1/data/${ACCOUNT}/${DATASET}/${name}`, { method: "POST", body: form });
  const body = (await response.json()) as { Status: { Message: string } };
  expect(response.status, body.Status.Message).toBe(200);
  return body.Status.Message;
}

/** Waits until the item is query-ready (its column images or its table store are built). */
async function queryReady(name: string): Promise<{ TableStore: { State: string } | null }> {
  for (const deadline = Date.now() + 120_000; ;) {
    const response = await api(`/v1/data/${ACCOUNT}/${DATASET}/${name}/metadata/storage`);
    const { Data } = (await response.json()) as { Data: { QueryReady: boolean; TableStore: { State: string } | null } };
    if (Data.QueryReady) return Data;
    if (Date.now() > deadline) throw new Error(`${name} is not query-ready: ${JSON.stringify(Data)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Runs SQL (never a reused result) and reads its result CSV as written and its first page of JSON rows. */
async function run(sql: string): Promise<{ csv: string; rows: unknown[][]; engine: string }> {
  const submitted = await api("/v1/query", {
    method: "POST",
    headers: { "content-type": "application/json", prefer: "wait=30" },
    body: JSON.stringify({ Sql: sql, Reuse: false }),
  });
  const { QueryId } = ((await submitted.json()) as { Data: { QueryId: string } }).Data;
  let status: { Status: string; Message: string; Engine: string };
  for (;;) {
    status = ((await (await api(`/v1/query/${QueryId}/status`)).json()) as { Data: typeof status }).Data;
    if (status.Status !== "queued" && status.Status !== "running") break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (status.Status !== "succeeded") throw new Error(`${sql}: ${status.Status}: ${status.Message}`);
  const redirect = await api(`/v1/query/${QueryId}/results/rawdata`, { redirect: "manual" });
  const csv = await (await fetch(redirect.headers.get("location")!)).text();
  const page = (await (await api(`/v1/query/${QueryId}/results/rows`)).json()) as { Data: { Rows: unknown[][] } };
  return { csv, rows: page.Data.Rows, engine: status.Engine };
}

beforeAll(async () => {
  server = await startWranglerDev({ TABLE_STORE_MIN_ROWS: String(STORE_MIN_ROWS) });
  token = (await httpLogin(server.url, ACCOUNT)).accessToken;
  expect((await api(`/v1/dataset/${ACCOUNT}/${DATASET}`, { method: "PUT" })).status).toBeLessThan(300);
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe("timestamps and empty strings from upload to result", () => {
  it("should say in the upload's message how TIMESTAMP values are stored", async () => {
    for (const [name, csv] of [
      ["small.csv", SMALL],
      ["large.csv", LARGE],
    ] as const)
      expect(await upload(name, csv)).toContain(
        "TIMESTAMP values (at) are stored in UTC as YYYY-MM-DD HH:MM:SS[.fff].",
      );
    expect((await queryReady("small.csv")).TableStore).toBeNull();
    expect((await queryReady("large.csv")).TableStore).toMatchObject({ State: "ready" });
  }, 180_000);

  for (const [name, engine] of [
    ["small.csv", "sqljs"],
    ["large.csv", "store"],
  ] as const) {
    const table = `\`${ACCOUNT}.${DATASET}.${name}\``;

    it(`should compare timestamps with literals written with a space and with datetime() (${engine})`, async () => {
      const day = await run(
        `SELECT id, at FROM ${table} WHERE at BETWEEN '2001-01-02 00:00:00' AND '2001-01-02 23:59:59' ORDER BY id`,
      );
      expect(day.engine).toBe(engine);
      expect(day.csv).toBe("id,at\n1,2001-01-02 00:00:00\n2,2001-01-02 23:59:59\n");

      const late = await run(
        `SELECT id, at FROM ${table} WHERE at > datetime('2001-01-02 23:00:00') AND id < 100 ORDER BY id`,
      );
      expect(late.csv).toBe("id,at\n2,2001-01-02 23:59:59\n3,2001-01-03 01:30:00\n");
      const early = await run(`SELECT id, at FROM ${table} WHERE at < datetime('2001-01-02')`);
      expect(early.csv).toBe("id,at\n4,2001-01-01 23:59:59.5\n");
    }, 60_000);

    it(`should keep "" apart from NULL in the result CSV and the JSON rows (${engine})`, async () => {
      const names = await run(`SELECT id, name, name IS NULL AS missing, n FROM ${table} WHERE id < 100 ORDER BY id`);
      expect(names.engine).toBe(engine);
      expect(names.csv).toBe('id,name,missing,n\n1,"",0,1\n2,,1,\n3,x,0,\n4,"a ""b""",0,4\n5,y,0,5\n');
      expect(names.rows).toEqual([
        [1, "", 0, 1],
        [2, null, 1, null],
        [3, "x", 0, null],
        [4, 'a "b"', 0, 4],
        [5, "y", 0, 5],
      ]);

      const literal = await run(`SELECT '' AS empty, NULL AS missing, count(*) AS n FROM ${table} WHERE id < 100`);
      expect(literal.engine).toBe(engine);
      expect(literal.csv).toBe('empty,missing,n\n"",,5\n');
      expect(literal.rows).toEqual([["", null, 5]]);
    }, 60_000);
  }
});

// CI installs Chromium; anywhere else without it the browser check is skipped, never silently in CI.
const browserTest = hasChromium || process.env.CI ? describe : describe.skip;

browserTest("the console's item page", () => {
  let browser: Browser;
  let owner: Person;

  beforeAll(async () => {
    browser = await launchBrowser();
    owner = await person(browser, ACCOUNT);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("should say how TIMESTAMP is stored, and show NULL as a chip and the empty string as nothing", async () => {
    await signIn(owner, server.url);
    await owner.page.goto(`${server.url}/console/#/d/${ACCOUNT}/${DATASET}/small.csv`);
    const at = owner.page
      .locator("table.schema tbody tr")
      .filter({ has: owner.page.getByRole("rowheader", { name: "at", exact: true }) });
    await expect
      .poll(() => at.textContent(), { timeout: 30_000 })
      .toContain("stored as YYYY-MM-DD HH:MM:SS[.fff] (UTC)");

    // The preview's grid: the name column is the third after the row number.
    const names = owner.page.locator(".grid-body .grid-row .grid-cell:nth-child(4)");
    await names.first().waitFor({ timeout: 60_000 });
    expect(await names.allTextContents()).toEqual(["", "NULL", "x", 'a "b"', "y"]);
    expect(await names.locator(".null").count()).toBe(1);
    expect(await names.nth(1).locator(".null").count()).toBe(1);
  }, 120_000);
});
