import { readFile } from "node:fs/promises";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchBrowser } from "./support/browser";
import { acceptCompletion, checkStep, confirming, person, shot, signIn, typeSql, type Person } from "./support/console";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// CI installs Chromium; anywhere else without it the browser test is skipped, never silently in CI.
const browserTest = hasChromium || process.env.CI ? describe : describe.skip;

/** The file alice means to upload, with a typo: "1O.5" (a letter O) in a DOUBLE column. */
const TYPO_CSV = "id,region,amount,day\n1,north,12.5,2026-01-03\n2,south,7.25,2026-01-04\n3,north,1O.5,2026-01-05\n";
const ORDERS_CSV =
  "id,region,amount,day\n" +
  "1,north,12.5,2026-01-03\n2,south,7.25,2026-01-04\n3,north,10.5,2026-01-05\n4,east,,2026-01-06\n" +
  "5,south,3.0,2026-01-07\n6,west,21.75,2026-01-08\n7,north,4.5,2026-01-09\n8,east,9.0,2026-01-10\n";
const TARGETS_CSV = "region,target\nnorth,25\nsouth,15\neast,10\nwest,30\n";
/** Large enough that an upload throttled to UPLOAD_BYTES_PER_SECOND takes seconds, so its progress bar can be watched. */
const EVENTS_CSV =
  "id,kind,value\n" +
  Array.from(
    { length: 4000 },
    (_, i) => `${i + 1},${["sale", "refund", "visit"][i % 3]},${(i * 0.25).toFixed(2)}`,
  ).join("\n") +
  "\n";
/** The second version of events.csv, which replaces the first. */
const EVENTS_V2_CSV = "id,kind,value\n1,refund,-2.5\n2,sale,4.0\n3,sale,8.25\n";
const UPLOAD_BYTES_PER_SECOND = 8 * 1024;

let server: DevServer;
let browser: Browser;

/** A Content-Security-Policy header as directive name → its sources. */
function policy(response: Response): Map<string, string[]> {
  return new Map(
    (response.headers.get("content-security-policy") ?? "")
      .split(";")
      .map((part) => part.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...sources]) => [name!, sources]),
  );
}

beforeAll(async () => {
  server = await startWranglerDev();
  if (hasChromium || process.env.CI) browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Picks a file in the upload box as the file chooser would. */
async function chooseFile(who: Person, name: string, text: string): Promise<void> {
  await who.page.locator('input[type="file"]').setInputFiles({ name, mimeType: "text/csv", buffer: Buffer.from(text) });
}

/**
 * Drops a file on the upload box as a person drags one there from their
 * desktop: dragenter, dragover and drop, each with a DataTransfer holding the file.
 */
async function dropFile(who: Person, name: string, text: string): Promise<void> {
  const dropzone = who.page.locator(".dropzone");
  const dataTransfer = await who.page.evaluateHandle(
    ([name, text]) => {
      // The test's types have no DOM; these are the page's own constructors.
      const page = globalThis as unknown as {
        DataTransfer: new () => { items: { add(file: unknown): void } };
        File: new (parts: string[], name: string, options: { type: string }) => unknown;
      };
      const transfer = new page.DataTransfer();
      transfer.items.add(new page.File([text], name, { type: "text/csv" }));
      return transfer;
    },
    [name, text] as const,
  );
  await dropzone.dispatchEvent("dragenter", { dataTransfer });
  await dropzone.dispatchEvent("dragover", { dataTransfer });
  // The box shows that it will take the file.
  await who.page.locator(".dropzone.dragging").waitFor();
  await dropzone.dispatchEvent("drop", { dataTransfer });
  await dataTransfer.dispose();
}

async function createDataset(who: Person, name: string): Promise<void> {
  await who.page.getByRole("link", { name: "Datasets", exact: true }).click();
  await who.page.getByLabel("Name", { exact: true }).fill(name);
  await who.page.getByRole("button", { name: "Create dataset" }).click();
  await expect.poll(() => who.page.locator("h1").textContent()).toBe(`${who.name}/${name}`);
}

/** Empties the editor and writes SQL into it at once, as a paste does (no completion pops up). */
async function pasteSql(who: Person, sql: string): Promise<void> {
  await who.page.locator(".cm-content").click();
  await who.page.keyboard.press("ControlOrMeta+a");
  await who.page.keyboard.press("Delete");
  await who.page.keyboard.insertText(sql);
}

/** Runs the editor's query with the keyboard and waits for its outcome (and, when it succeeded, its rows). */
async function runAndWait(who: Person, outcome: "succeeded" | "failed"): Promise<void> {
  await who.page.keyboard.press("Control+Enter");
  await who.page.locator(`.query-state.${outcome}`).waitFor({ timeout: 60_000 });
  if (outcome === "succeeded") await who.page.locator(".grid-body .grid-row").first().waitFor();
}

/** The texts of the grid's cells in one column (the first column is the row number). */
function gridColumn(who: Person, column: number) {
  return who.page.locator(`.grid-body .grid-row .grid-cell:nth-child(${column + 2})`).allTextContents();
}

browserTest("the web console, two people from sign-in to a revoked share", () => {
  let alice: Person;
  let bob: Person;

  beforeAll(async () => {
    alice = await person(browser, "alice");
    bob = await person(browser, "bob");
  });

  afterAll(async () => {
    await alice?.context.close();
    await bob?.context.close();
  });

  it("should let alice sign in with the service's login and find empty lists that say what to do", async () => {
    await alice.page.goto(`${server.url}/`);
    await checkStep(alice.page, "01-landing");
    await alice.page.getByRole("link", { name: "Open the console" }).click();
    await alice.page.getByRole("link", { name: "Sign in" }).waitFor();
    await checkStep(alice.page, "02-sign-in");

    await signIn(alice, server.url);

    await expect.poll(() => alice.page.getByText("No datasets yet — create one above.").count()).toBe(1);
    await checkStep(alice.page, "03-datasets-empty");
    // bob signs in too, so that alice can share with his account later.
    await signIn(bob, server.url);
  });

  it("should let alice create a dataset and refuse her upload with the typo, naming row, column and value", async () => {
    await createDataset(alice, "sales");
    await checkStep(alice.page, "04-dataset-created");

    await chooseFile(alice, "orders.csv", TYPO_CSV);
    await alice.page.getByLabel("Declare them", { exact: false }).check();
    await alice.page.getByLabel("Type of id").selectOption("INTEGER");
    await alice.page.getByLabel("Type of amount").selectOption("DOUBLE");
    await alice.page.getByLabel("Type of day").selectOption("DATE");
    await checkStep(alice.page, "05-upload-declared");
    await alice.page.getByRole("button", { name: "Upload", exact: true }).click();

    const refusal = alice.page.locator(".refusal");
    await refusal.waitFor();
    const cells = await refusal.locator("tbody td").allTextContents();
    expect(cells.slice(0, 2)).toEqual(["3", "amount"]);
    expect(cells[2]).toContain("'1O.5' is not a valid DOUBLE");
    await checkStep(alice.page, "06-upload-refused");
  });

  it("should take the fixed file, list it, and preview its first rows with types and NULLs", async () => {
    await chooseFile(alice, "orders.csv", ORDERS_CSV);
    await alice.page.getByLabel("Declare them", { exact: false }).check();
    await alice.page.getByLabel("Type of id").selectOption("INTEGER");
    await alice.page.getByLabel("Type of amount").selectOption("DOUBLE");
    await alice.page.getByLabel("Type of day").selectOption("DATE");
    await alice.page.getByRole("button", { name: "Upload", exact: true }).click();
    await alice.page.locator(".notice.success").waitFor();
    await expect.poll(() => alice.page.locator("table.items tbody tr").count()).toBe(1);
    await checkStep(alice.page, "07-uploaded");

    await alice.page.getByRole("link", { name: "orders.csv" }).click();
    await alice.page.locator(".grid-body .grid-row").first().waitFor({ timeout: 60_000 });
    expect(await gridColumn(alice, 1)).toEqual(["north", "south", "north", "east", "south", "west", "north", "east"]);
    expect(await gridColumn(alice, 2)).toEqual(["12.5", "7.25", "10.5", "NULL", "3.0", "21.75", "4.5", "9.0"]);
    expect(await alice.page.locator(".grid-body .null").count()).toBe(1);
    expect(await alice.page.locator("dl.facts").textContent()).toContain("by alice");
    await checkStep(alice.page, "08-item-preview");
  });

  it("should complete the item's three-part name and its columns, run the query and chart it", async () => {
    await alice.page.getByRole("link", { name: "SQL", exact: true }).click();
    await alice.page.locator(".cm-content").click();
    await alice.page.keyboard.press("ControlOrMeta+a");
    await alice.page.keyboard.press("Delete");
    await typeSql(alice.page, "SELECT o.region, sum(o.amount) AS total");
    await alice.page.keyboard.press("Escape");
    await alice.page.keyboard.press("Enter");
    await typeSql(alice.page, "FROM alice.sal");
    await acceptCompletion(alice.page, "sales");
    await typeSql(alice.page, ".ord");
    await alice.page.locator(".cm-tooltip-autocomplete li", { hasText: "orders.csv" }).waitFor();
    await checkStep(alice.page, "09-completion");
    await acceptCompletion(alice.page, "orders.csv");
    await typeSql(alice.page, " o");
    await alice.page.keyboard.press("Escape");
    await alice.page.keyboard.press("Enter");
    await typeSql(alice.page, "GROUP BY o.reg");
    await acceptCompletion(alice.page, "region");
    await alice.page.keyboard.press("Escape");
    await alice.page.keyboard.press("Enter");
    await typeSql(alice.page, "ORDER BY total DESC");
    await alice.page.keyboard.press("Escape");

    const text = await alice.page.locator(".cm-content").innerText();
    expect(text.replace(/\s+/g, " ")).toBe(
      "SELECT o.region, sum(o.amount) AS total FROM alice.sales.`orders.csv` o GROUP BY o.region ORDER BY total DESC",
    );

    await runAndWait(alice, "succeeded");
    expect(await gridColumn(alice, 0)).toEqual(["north", "west", "south", "east"]);
    expect(await gridColumn(alice, 1)).toEqual(["27.5", "21.75", "10.25", "9.0"]);
    await checkStep(alice.page, "10-results");

    await alice.page.getByRole("button", { name: "Chart" }).click();
    await alice.page.locator("canvas[role=img]").waitFor();
    expect(await alice.page.locator("canvas[role=img]").getAttribute("aria-label")).toBe(
      "Bar chart of total by region, 4 points",
    );
    await checkStep(alice.page, "11-chart");
  });

  it("should download the result as CSV", async () => {
    const [download] = await Promise.all([
      alice.page.waitForEvent("download"),
      alice.page.getByRole("link", { name: "Download CSV" }).click(),
    ]);
    const csv = await readFile((await download.path())!, "utf8");
    expect(csv).toBe("region,total\nnorth,27.5\nwest,21.75\nsouth,10.25\neast,9.0\n");

    await alice.context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await alice.page.getByRole("button", { name: "Copy as CSV" }).click();
    await alice.page.getByText("Copied 4 rows as CSV.").waitFor();
    expect(await alice.page.evaluate<string>("navigator.clipboard.readText()")).toBe(
      "region,total\nnorth,27.5\nwest,21.75\nsouth,10.25\neast,9.0\n",
    );
    await checkStep(alice.page, "11a-copied");
  });

  it("should list alice's queries in the history and re-run one", async () => {
    await alice.page.getByRole("link", { name: "History", exact: true }).click();
    const entries = alice.page.locator(".history > li");
    await entries.first().waitFor();
    const grouped = entries.filter({ hasText: "GROUP BY o.region" });
    expect(await grouped.locator(".badge").textContent()).toBe("succeeded");
    await checkStep(alice.page, "11c-history");

    await grouped.getByRole("button", { name: "Re-run" }).click();
    await alice.page.locator(".query-state.succeeded").waitFor({ timeout: 60_000 });
    await alice.page.locator(".grid-body .grid-row").first().waitFor();
    expect(await gridColumn(alice, 0)).toEqual(["north", "west", "south", "east"]);
    // The same SQL on the same data: the service answers from the first run's kept result, and the console says so.
    expect(await alice.page.locator(".query-state").textContent()).toContain(
      "reused the result of an identical earlier query",
    );
    await checkStep(alice.page, "11d-rerun-reused");

    await alice.page.getByRole("link", { name: "History", exact: true }).click();
    const runs = alice.page.locator(".history > li").filter({ hasText: "GROUP BY o.region" });
    await expect.poll(() => runs.count()).toBe(2);
    expect(await runs.nth(0).locator(".timing").textContent()).toBe("reused");
    expect(await runs.nth(1).locator(".timing").textContent()).toMatch(/^(\d+ ms|\d+\.\d s|\d+ min \d+ s)$/);
    await checkStep(alice.page, "11e-history-reused");
  });

  it("should let alice share the dataset with bob, who sees it under shared and joins it with his own data", async () => {
    await alice.page.getByRole("link", { name: "Datasets", exact: true }).click();
    await alice.page.getByRole("link", { name: /alice\/sales/ }).click();
    await alice.page.getByLabel("Account", { exact: true }).fill("bob");
    await alice.page.getByRole("button", { name: "Share" }).click();
    await expect
      .poll(() => alice.page.locator(".grants li").allTextContents())
      .toEqual([expect.stringContaining("bob may read")]);
    await checkStep(alice.page, "12-shared");

    await bob.page.reload();
    const shared = bob.page.locator("section", { has: bob.page.getByRole("heading", { name: /Shared with you/ }) });
    await expect.poll(() => shared.locator("li").allTextContents()).toEqual([expect.stringContaining("alice/sales")]);
    await checkStep(bob.page, "13-bob-sees-shared");

    await createDataset(bob, "plans");
    await chooseFile(bob, "targets.csv", TARGETS_CSV);
    await bob.page.getByRole("button", { name: "Upload", exact: true }).click();
    await bob.page.locator(".notice.success").waitFor();

    await bob.page.getByRole("link", { name: "SQL", exact: true }).click();
    await pasteSql(
      bob,
      "SELECT t.region, t.target, sum(o.amount) AS sold\n" +
        "FROM bob.plans.`targets.csv` t JOIN alice.sales.`orders.csv` o ON o.region = t.region\n" +
        "GROUP BY t.region, t.target ORDER BY t.region",
    );
    await runAndWait(bob, "succeeded");
    expect(await gridColumn(bob, 0)).toEqual(["east", "north", "south", "west"]);
    expect(await gridColumn(bob, 2)).toEqual(["9.0", "27.5", "10.25", "21.75"]);
    await checkStep(bob.page, "14-bob-join");
  });

  it("should take bob's access away when alice revokes the grant", async () => {
    await alice.page.getByRole("button", { name: "Revoke bob's access" }).click();
    await alice.page.getByText("Not shared with anyone.").waitFor();
    await checkStep(alice.page, "15-revoked");

    await runAndWait(bob, "failed");
    expect(await bob.page.locator(".notice.error").textContent()).toMatch(/alice\.sales/);
    await checkStep(bob.page, "16-bob-join-fails");

    await bob.page.getByRole("link", { name: "Datasets", exact: true }).click();
    await bob.page.getByText("Nothing is shared with you yet.").waitFor();
    await checkStep(bob.page, "17-bob-lost-it");
  });

  it("should let alice make the dataset public, which bob then sees, and private again", async () => {
    // alice is still on the dataset's page, where she revoked the grant.
    expect(await alice.page.locator("h1").textContent()).toBe("alice/sales");
    await alice.page.getByRole("combobox", { name: /^Visibility/ }).selectOption("public");
    await alice.page.getByText("The dataset is now public.").waitFor();
    expect(await alice.page.locator(".page-title .badge").textContent()).toBe("public");
    await checkStep(alice.page, "17a-public");

    const publicList = bob.page.locator("section", { has: bob.page.getByRole("heading", { name: /^Public/ }) });
    await bob.page.reload();
    await expect
      .poll(() => publicList.locator("li").allTextContents())
      .toEqual([expect.stringContaining("alice/sales")]);
    await checkStep(bob.page, "17b-bob-sees-public");

    await alice.page.getByRole("combobox", { name: /^Visibility/ }).selectOption("private");
    await alice.page.getByText("The dataset is now private.").waitFor();
    expect(await alice.page.locator(".page-title .badge").textContent()).toBe("private");
    await checkStep(alice.page, "17c-private-again");
    await bob.page.reload();
    await bob.page.getByText("No public datasets from other accounts.").waitFor();
    expect(await publicList.locator("li").count()).toBe(0);
  });

  it("should take a dropped file with a progress bar that moves as the bytes go", async () => {
    await dropFile(alice, "events.csv", EVENTS_CSV);
    expect(await alice.page.getByRole("form", { name: /^events\.csv, / }).textContent()).toContain("events.csv");
    expect(await alice.page.locator(".dropzone.dragging").count()).toBe(0);
    expect(await alice.page.getByLabel("Item name").inputValue()).toBe("events.csv");

    // A slow connection (the browser's own throttling), so the bar is seen partway rather than only at its end.
    const cdp = await alice.context.newCDPSession(alice.page);
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: UPLOAD_BYTES_PER_SECOND,
    });
    try {
      await alice.page.getByRole("button", { name: "Upload", exact: true }).click();
      const bar = alice.page.getByRole("progressbar", { name: "Upload progress" });
      await bar.waitFor();
      await expect
        .poll(() =>
          bar.evaluate((element) => {
            const progress = element as unknown as { value: number; max: number };
            return progress.value > 0 && progress.value < progress.max;
          }),
        )
        .toBe(true);
      expect(await alice.page.locator(".progress span").textContent()).toMatch(/ of \d+(\.\d)? kB \(\d{1,2}%\)$/);
      await checkStep(alice.page, "17d-upload-progress");
      await alice.page.locator('section[aria-labelledby="upload-title"] .notice.success').waitFor({ timeout: 60_000 });
    } finally {
      await cdp.detach();
    }
    await expect.poll(() => alice.page.locator("table.items tbody tr").count()).toBe(2);
    expect(await alice.page.locator("table.items").textContent()).toContain("4,000");
    await checkStep(alice.page, "17e-dropped-uploaded");
  });

  it("should replace the item with a new version, download it as uploaded, and delete it", async () => {
    await alice.page.getByRole("link", { name: "events.csv" }).click();
    const rows = alice.page.locator("dl.facts dd").first();
    await expect.poll(() => rows.textContent()).toBe("4,000");
    await alice.page.locator(".grid-body .grid-row").first().waitFor({ timeout: 60_000 });

    await alice.page.getByRole("button", { name: "Replace" }).click();
    await chooseFile(alice, "events-v2.csv", EVENTS_V2_CSV);
    // A new version keeps the item's columns unless alice says otherwise: they come declared, with their types.
    await expect.poll(() => alice.page.getByLabel("Type of value").inputValue()).toBe("DOUBLE");
    expect(await alice.page.getByLabel("Type of id").inputValue()).toBe("INTEGER");
    await checkStep(alice.page, "17f-replace");
    const asked = await confirming(alice, async () => {
      await alice.page.getByRole("button", { name: "Upload and replace" }).click();
      await alice.page.getByText("events.csv was replaced").waitFor({ timeout: 60_000 });
    });
    expect(asked).toEqual([expect.stringContaining("Replace events.csv?")]);
    await expect.poll(() => rows.textContent()).toBe("3");
    await expect.poll(() => gridColumn(alice, 1), { timeout: 60_000 }).toEqual(["refund", "sale", "sale"]);
    expect(await gridColumn(alice, 2)).toEqual(["-2.5", "4.0", "8.25"]);
    await checkStep(alice.page, "17g-replaced");

    const [download] = await Promise.all([
      alice.page.waitForEvent("download"),
      alice.page.getByRole("link", { name: "Download", exact: true }).click(),
    ]);
    expect(download.suggestedFilename()).toBe("events.csv");
    expect(await readFile((await download.path())!, "utf8")).toBe(EVENTS_V2_CSV);

    const deleted = await confirming(alice, async () => {
      await alice.page.getByRole("button", { name: "Delete", exact: true }).click();
      await expect.poll(() => alice.page.locator("h1").textContent()).toBe("alice/sales");
    });
    expect(deleted).toEqual([expect.stringContaining("Delete events.csv?")]);
    await alice.page.getByText("events.csv was deleted.").waitFor();
    await expect.poll(() => alice.page.locator("table.items tbody th").allTextContents()).toEqual(["orders.csv"]);
    await checkStep(alice.page, "17h-deleted");
  });

  it("should fit a phone's width", async () => {
    const phone = await person(browser, "alice-phone", { width: 390, height: 844 });
    try {
      await signIn(phone, server.url);
      await createDataset(phone, "notes");
      await chooseFile(phone, "notes.csv", ORDERS_CSV);
      await phone.page.getByRole("button", { name: "Upload", exact: true }).click();
      await phone.page.locator(".notice.success").waitFor();
      await checkStep(phone.page, "18-phone-dataset");
      await phone.page.getByRole("link", { name: "SQL", exact: true }).click();
      await pasteSql(phone, "SELECT region, count(*) AS n FROM `alice-phone.notes.notes.csv` GROUP BY region");
      await runAndWait(phone, "succeeded");
      await checkStep(phone.page, "19-phone-results");
      const overflow = await phone.page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
      expect(overflow).toBeLessThanOrEqual(0);
    } finally {
      await phone.context.close();
    }
  });

  it("should keep 100,000 rows in a grid that renders only what is in view, sortable", async () => {
    await alice.page.getByRole("link", { name: "SQL", exact: true }).click();
    await pasteSql(
      alice,
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)\n" +
        "SELECT i, i % 7 AS bucket, CASE WHEN i % 10 = 0 THEN NULL ELSE 'row ' || i END AS label FROM n",
    );
    await runAndWait(alice, "succeeded");
    expect(await alice.page.locator(".result-bar [role=status]").textContent()).toBe("100,000 rows");
    expect(await alice.page.locator(".grid-body .grid-row").count()).toBeLessThan(60);

    await alice.page.locator(".grid").evaluate((grid) => grid.scrollTo(0, grid.scrollHeight));
    await expect.poll(() => gridColumn(alice, 0)).toContain("100000");
    await alice.page.getByRole("button", { name: /^i INTEGER/ }).click();
    await alice.page.getByRole("button", { name: /^i INTEGER/ }).click();
    await alice.page.locator(".grid").evaluate((grid) => grid.scrollTo(0, 0));
    await expect.poll(async () => (await gridColumn(alice, 0))[0]).toBe("100000");
    expect(await alice.page.locator('[role=columnheader][aria-sort="descending"]').textContent()).toContain("i");
    await checkStep(alice.page, "19b-100k-rows");
  });

  it("should show a long query's live status and cancel it", async () => {
    await pasteSql(
      alice,
      // Rows, not one aggregate: the engine yields between rows, and under wrangler dev the engine and the API
      // share one workerd, so a statement that never yields would hold up the API's answers too.
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000000) SELECT i, i * 2 FROM n",
    );
    await alice.page.keyboard.press("Control+Enter");
    await alice.page.getByRole("button", { name: "Cancel" }).click();
    await alice.page.locator(".query-state.cancelled").waitFor({ timeout: 60_000 });
    await checkStep(alice.page, "11b-cancelled");
  });

  it("should sign alice out and revoke her session", async () => {
    await alice.page.getByRole("button", { name: "Sign out" }).click();
    await alice.page.getByRole("link", { name: "Sign in" }).waitFor();
    await shot(alice.page, "20-signed-out");
    const session = await alice.page.evaluate(async () => (await fetch("/console/session")).json());
    expect(session).toMatchObject({ Data: { AccountName: null } });
  });

  it("should have asked for nothing outside the origin and broken no rule of the page's policy", () => {
    for (const who of [alice, bob]) {
      expect(who.problems, who.name).toEqual([]);
      const outside = who.requests.filter((url) => !url.startsWith(`${server.url}/`) && !/^(data|blob):/.test(url));
      expect(outside, who.name).toEqual([]);
      expect(who.requests.length).toBeGreaterThan(10);
    }
  });
});

describe("the console's pages on wrangler dev", () => {
  it.each(["/", "/console/", "/console/app.js", "/console/app.css", "/v1/docs", "/assets/swagger-ui-bundle.js"])(
    "should send %s with a policy that runs no inline script and allows no framing, and the usual headers",
    async (path) => {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status).toBe(200);
      const csp = policy(response);
      expect(csp.get("default-src")).toEqual(["'none'"]);
      expect(csp.get("frame-ancestors")).toEqual(["'none'"]);
      expect(csp.get("script-src") ?? []).not.toContain("'unsafe-inline'");
      expect(csp.get("style-src")).toEqual(["'self'"]);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      await response.arrayBuffer();
    },
  );

  it("should let the console's page run its own script and talk to this origin only", async () => {
    const csp = policy(await fetch(`${server.url}/console/`));
    expect(csp.get("script-src")).toEqual(["'self'"]);
    expect(csp.get("connect-src")).toEqual(["'self'"]);
  });

  it("should still answer an unknown path with the envelope's 404, not a page", async () => {
    const response = await fetch(`${server.url}/no-such-page`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      Status: { Code: 404, Message: expect.stringContaining("No such endpoint") },
    });
  });
});
