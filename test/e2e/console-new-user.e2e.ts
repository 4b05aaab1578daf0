import { readFile } from "node:fs/promises";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchBrowser, signInOnPage } from "./support/browser";
import { chooseFiles, confirming, dropFiles, person, type Person } from "./support/console";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// CI installs Chromium; anywhere else without it the browser test is skipped, never silently in CI.
const browserTest = hasChromium || process.env.CI ? describe : describe.skip;

const TERMS_URL = "https://example.com/dqs-terms";

// Files shaped like vega-datasets' (a new user's walk in issue 24): each has columns of its own.
const CO2 = {
  name: "co2-concentration.csv",
  text: "Date,CO2\n1958-03-01,315.7\n1958-04-01,317.45\n1958-05-01,317.51\n",
};
const GLOBAL_TEMP = { name: "global-temp.csv", text: "year,temp\n1880,-0.11\n1881,-0.08\n1882,-0.1\n1883,-0.17\n" };
const STOCKS = { name: "stocks.csv", text: "symbol,date,price\nMSFT,2000-01-01,39.81\nMSFT,2000-02-01,36.35\n" };
const WEATHER = { name: "seattle weather.csv", text: "date,precipitation,temp_max\n2012-01-01,0.0,12.8\n" };
const AIRPORTS = { name: "airports.csv", text: "iata,name,state\n00M,Thigpen,MS\n00R,Livingston Municipal,TX\n" };

let server: DevServer;
let browser: Browser;

beforeAll(async () => {
  server = await startWranglerDev({ TERMS_URL });
  if (hasChromium || process.env.CI) browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Every message the page wrote to the browser's console as an error (a failed request logs one). */
function consoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`${message.text()} (${message.location().url})`);
  });
  return errors;
}

/** The upload box's entry for one file. */
const entry = (who: Person, file: { name: string }) =>
  who.page.getByRole("form", { name: new RegExp(`^${file.name}, `) });

/** Empties the editor and writes SQL into it at once, as a paste does. */
async function pasteSql(who: Person, sql: string): Promise<void> {
  await who.page.locator(".cm-content").click();
  await who.page.keyboard.press("ControlOrMeta+a");
  await who.page.keyboard.press("Delete");
  await who.page.keyboard.insertText(sql);
}

/** The texts of the grid's cells in one column (the first column is the row number). */
function gridColumn(who: Person, column: number) {
  return who.page.locator(`.grid-body .grid-row .grid-cell:nth-child(${column + 2})`).allTextContents();
}

/** The background colour of the page's body, as the browser computed it from the stylesheet. */
function bodyBackground(page: Page): Promise<string> {
  return page.evaluate(() => {
    const window = globalThis as unknown as {
      document: { body: unknown };
      getComputedStyle(element: unknown): { backgroundColor: string };
    };
    return window.getComputedStyle(window.document.body).backgroundColor;
  });
}

browserTest("what a new user met in the console (issue 24)", () => {
  let dana: Person;
  let errors: string[];

  beforeAll(async () => {
    dana = await person(browser, "dana");
    errors = consoleErrors(dana.page);
  });

  afterAll(async () => {
    await dana?.context.close();
  });

  it("should open the signed-out console without a failed request in the browser's console", async () => {
    await dana.page.goto(`${server.url}/console/`);
    await dana.page.getByRole("link", { name: "Sign in" }).waitFor();
    await dana.page.screenshot({ path: "/tmp/i24-signed-out.png", fullPage: true });
    expect(errors).toEqual([]);
  });

  it("should show the sign-in and terms pages in the console's look, the terms linked", async () => {
    await expect.poll(() => bodyBackground(dana.page)).not.toBe("rgba(0, 0, 0, 0)");
    const consoleBackground = await bodyBackground(dana.page);
    await dana.page.getByRole("link", { name: "Sign in" }).click();
    await dana.page.locator('input[name="username"]').waitFor();
    // Polled: the form can be there before its stylesheet is applied on a busy machine.
    await expect.poll(() => bodyBackground(dana.page)).toBe(consoleBackground);
    expect(await dana.page.locator("header.top .brand").textContent()).toBe("dqs");
    await dana.page.screenshot({ path: "/tmp/i24-sign-in.png", fullPage: true });

    await dana.page.fill('input[name="username"]', "dana");
    await dana.page.click('button[type="submit"]');
    await dana.page.locator("#terms-version").waitFor();
    await expect.poll(() => bodyBackground(dana.page)).toBe(consoleBackground);
    expect(await dana.page.getByRole("link", { name: /Read the terms/ }).getAttribute("href")).toBe(TERMS_URL);
    await dana.page.screenshot({ path: "/tmp/i24-terms.png", fullPage: true });

    await dana.page.click('button[name="accept"]');
    await dana.page.waitForURL(`${server.url}/console/`);
    await expect.poll(() => dana.page.locator(".account").textContent()).toBe("dana");
  });

  it("should answer the terms form's address, asked for again, with a page that says what to do", async () => {
    const other = await browser.newPage();
    try {
      await other.goto(`${server.url}/v1/auth`);
      await signInOnPage(other, "dana-tokens");
      // The tokens page is the answer to the terms form's POST; Enter in the address bar asks for it with GET.
      expect(other.url()).toBe(`${server.url}/v1/auth/terms`);
      const response = await other.goto(other.url());
      expect(response?.status()).toBe(200);
      await other.getByRole("heading", { name: "This sign-in step has ended" }).waitFor();
      expect(await other.getByRole("link", { name: "Open the console" }).getAttribute("href")).toBe("/console/");
      expect(await other.getByRole("link", { name: /Sign in again/ }).getAttribute("href")).toBe("/v1/auth");
      await other.screenshot({ path: "/tmp/i24-terms-get.png", fullPage: true });
    } finally {
      await other.close();
    }
  });

  it("should give each new file its own name and columns after an upload, never the last item's", async () => {
    await dana.page.getByRole("link", { name: "Datasets", exact: true }).click();
    await dana.page.getByLabel("Name", { exact: true }).fill("vega-demo");
    await dana.page.getByRole("button", { name: "Create dataset" }).click();
    await expect.poll(() => dana.page.locator("h1").textContent()).toBe("dana/vega-demo");

    await chooseFiles(dana.page, [CO2]);
    await entry(dana, CO2).getByRole("button", { name: "Upload", exact: true }).click();
    await entry(dana, CO2).locator(".notice.success").waitFor();
    await expect.poll(() => dana.page.locator("table.items tbody th").allTextContents()).toEqual([CO2.name]);

    // The next file, picked or dropped, is a new item under its own name, with its own columns.
    await chooseFiles(dana.page, [GLOBAL_TEMP]);
    const temp = entry(dana, GLOBAL_TEMP);
    expect(await temp.getByLabel("Item name").inputValue()).toBe("global-temp.csv");
    expect(await temp.getByRole("button", { name: "Upload and replace" }).count()).toBe(0);
    await temp.getByLabel("Declare them", { exact: false }).check();
    expect(
      await temp
        .getByLabel(/^Name of column/)
        .evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value)),
    ).toEqual(["year", "temp"]);
    // The finished upload gave its place to the new file.
    expect(await entry(dana, CO2).count()).toBe(0);
    await dana.page.screenshot({ path: "/tmp/i24-next-file.png", fullPage: true });

    await dropFiles(dana.page, [STOCKS]);
    const stocks = entry(dana, STOCKS);
    expect(await stocks.getByLabel("Item name").inputValue()).toBe("stocks.csv");
    await stocks.getByLabel("Declare them", { exact: false }).check();
    expect(
      await stocks
        .getByLabel(/^Name of column/)
        .evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value)),
    ).toEqual(["symbol", "date", "price"]);
    await stocks.getByLabel("Type of price").selectOption("DOUBLE");

    const asked = await confirming(dana, async () => {
      await dana.page.getByRole("button", { name: /^Upload all \(2 waiting\)/ }).click();
      await temp.locator(".notice.success").waitFor({ timeout: 60_000 });
      await stocks.locator(".notice.success").waitFor({ timeout: 60_000 });
    });
    // Nothing was replaced, so nothing was asked.
    expect(asked).toEqual([]);
    await expect
      .poll(() => dana.page.locator("table.items tbody th").allTextContents())
      .toEqual([CO2.name, GLOBAL_TEMP.name, STOCKS.name].sort());
    // co2-concentration.csv still holds its own rows.
    const rows = await dana.page
      .locator("table.items tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => (tr as unknown as { innerText: string }).innerText.split("\t").slice(0, 2).join(" ")),
      );
    expect(rows).toEqual([`${CO2.name} 3`, `${GLOBAL_TEMP.name} 4`, `${STOCKS.name} 2`]);
    await dana.page.screenshot({ path: "/tmp/i24-uploaded-two.png", fullPage: true });
  });

  it("should take several files at once, each with its own name, progress and result", async () => {
    await chooseFiles(dana.page, [WEATHER, AIRPORTS]);
    expect(await entry(dana, WEATHER).getByLabel("Item name").inputValue()).toBe("seattle_weather.csv");
    expect(await entry(dana, AIRPORTS).getByLabel("Item name").inputValue()).toBe("airports.csv");

    await entry(dana, AIRPORTS).getByRole("button", { name: "Upload", exact: true }).click();
    await entry(dana, AIRPORTS).locator(".notice.success").waitFor();
    // The other file still waits with its own form; the one uploaded says what came of it.
    expect(await entry(dana, WEATHER).getByRole("button", { name: "Upload", exact: true }).isEnabled()).toBe(true);
    expect(await entry(dana, AIRPORTS).locator(".notice.success").textContent()).toMatch(/2 rows/);
    await entry(dana, WEATHER).getByRole("button", { name: "Upload", exact: true }).click();
    await entry(dana, WEATHER).locator(".notice.success").waitFor();
    await expect.poll(() => dana.page.locator("table.items tbody tr").count()).toBe(5);
    await dana.page.screenshot({ path: "/tmp/i24-several.png", fullPage: true });
  });

  it("should replace an item only as the person chooses, saying when a file's columns differ", async () => {
    // A file under an existing item's name: the box says it replaces it, and asks before it does.
    await chooseFiles(dana.page, [{ name: CO2.name, text: "year,co2\n1959,315.97\n" }]);
    const again = entry(dana, CO2);
    await again.getByText(`An item named ${CO2.name} exists`).waitFor();
    await again.getByText(/columns differ from co2-concentration\.csv's/).waitFor();
    expect(await again.getByLabel("Let dqs infer them", { exact: false }).isChecked()).toBe(true);
    await dana.page.screenshot({ path: "/tmp/i24-replace-choice.png", fullPage: true });

    // Another name keeps the item: a new one is made.
    await again.getByLabel("Item name").fill("co2-1959.csv");
    expect(await again.getByRole("button", { name: "Upload", exact: true }).count()).toBe(1);
    const asked = await confirming(dana, async () => {
      await again.getByRole("button", { name: "Upload", exact: true }).click();
      await again.locator(".notice.success").waitFor();
    });
    expect(asked).toEqual([]);
    await expect.poll(() => dana.page.locator("table.items tbody tr").count()).toBe(6);
  });

  it("should sort a result larger than the grid holds as a whole, and download it under a name that says what it is", async () => {
    await dana.page.getByRole("link", { name: "SQL", exact: true }).click();
    await pasteSql(
      dana,
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150000)\nSELECT i, i % 7 AS bucket FROM n",
    );
    await dana.page.keyboard.press("Control+Enter");
    await dana.page.locator(".query-state.succeeded").waitFor({ timeout: 120_000 });
    const status = dana.page.locator(".result-bar [role=status]");
    await expect
      .poll(() => status.textContent(), { timeout: 60_000 })
      .toMatch(/^150,000 rows; showing the first 100,000/);

    const header = dana.page.getByRole("button", { name: /^i INTEGER/ });
    await header.click();
    await expect
      .poll(() => status.textContent(), { timeout: 120_000 })
      .toMatch(/^All 150,000 rows sorted by i \(ascending\)/);
    await header.click();
    await expect
      .poll(() => status.textContent(), { timeout: 120_000 })
      .toMatch(/^All 150,000 rows sorted by i \(descending\)/);
    // The largest of all rows, not of the first 100,000 loaded.
    await expect.poll(async () => (await gridColumn(dana, 0))[0]).toBe("150000");
    expect(await dana.page.locator('[role=columnheader][aria-sort="descending"]').textContent()).toContain("i");
    await dana.page.screenshot({ path: "/tmp/i24-sorted-all.png", fullPage: true });

    const [download] = await Promise.all([
      dana.page.waitForEvent("download"),
      dana.page.getByRole("link", { name: "Download CSV" }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^query-\d{4}-\d\d-\d\d-\d{6}\.csv$/);
    expect((await readFile((await download.path())!, "utf8")).split("\n").slice(0, 2)).toEqual([
      "i,bucket",
      "150000,4",
    ]);

    // A third click puts back the query's own order.
    await header.click();
    await expect.poll(() => status.textContent()).toMatch(/^150,000 rows; showing the first 100,000/);
    expect((await gridColumn(dana, 0))[0]).toBe("1");
  });

  it("should name a download of a query on one item after the item", async () => {
    await pasteSql(dana, "SELECT * FROM dana.`vega-demo`.`global-temp.csv` ORDER BY year");
    await dana.page.keyboard.press("Control+Enter");
    await dana.page.locator(".query-state.succeeded").waitFor({ timeout: 60_000 });
    await dana.page.locator(".grid-body .grid-row").first().waitFor();
    const [download] = await Promise.all([
      dana.page.waitForEvent("download"),
      dana.page.getByRole("link", { name: "Download CSV" }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^global-temp-query-\d{4}-\d\d-\d\d-\d{6}\.csv$/);
  });

  it("should keep the editor's text through a reload", async () => {
    const sql = "SELECT year, temp\nFROM dana.`vega-demo`.`global-temp.csv`\nWHERE temp > -0.1 -- kept";
    await pasteSql(dana, sql);
    await dana.page.reload();
    await dana.page.locator(".cm-content").waitFor();
    await expect.poll(() => dana.page.locator(".cm-content").innerText()).toBe(sql);
    await dana.page.screenshot({ path: "/tmp/i24-editor-kept.png", fullPage: true });
  });

  it("should have logged no error in the browser's console, and broken no rule of the page's policy", () => {
    expect(errors).toEqual([]);
    expect(dana.problems).toEqual([]);
  });
});
