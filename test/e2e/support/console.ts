import { readFileSync } from "node:fs";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Dialog, Page } from "playwright-core";
import { expect } from "vitest";
import { signInOnPage } from "./browser";

/** Where the console tests leave a screenshot of each step (gitignored; docs/console.md). */
export const SCREENSHOTS = resolve(import.meta.dirname, "../screenshots");

const AXE = readFileSync(resolve(import.meta.dirname, "../../../node_modules/axe-core/axe.min.js"), "utf8");

/** A browser context as one person, recording what its pages ask for and what the browser refuses. */
export interface Person {
  name: string;
  context: BrowserContext;
  page: Page;
  /** Every URL a page of this context requested. */
  requests: string[];
  /** Console messages about Content-Security-Policy violations, and uncaught page errors. */
  problems: string[];
}

/** A context for one person at the given window size (1280×800 unless told). */
export async function person(browser: Browser, name: string, viewport = { width: 1280, height: 800 }): Promise<Person> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  const requests: string[] = [];
  const problems: string[] = [];
  context.on("request", (request) => requests.push(request.url()));
  // The browser's own report of a refused inline style or script, with what it refused, into the console.
  await context.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (event) => console.error(
      "Content-Security-Policy refused " + event.violatedDirective + " at " + location.href + ": " + event.sample));`,
  });
  page.on("console", (message) => {
    if (/Content.Security.Policy|Refused to/i.test(message.text())) problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return { name, context, page, requests, problems };
}

/** Signs in through the console's button, the development provider and (for a new account) the terms. */
export async function signIn(who: Person, baseUrl: string): Promise<void> {
  await who.page.goto(`${baseUrl}/console/`);
  await who.page.getByRole("link", { name: "Sign in" }).click();
  await signInOnPage(who.page, who.name);
  await who.page.waitForURL(`${baseUrl}/console/`);
  await expect.poll(() => who.page.locator(".account").textContent()).toBe(who.name);
}

/** Saves a full-page screenshot of the step. */
export async function shot(page: Page, step: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${step}.png`), fullPage: true });
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; html: string }[];
}

/** Runs axe-core in the page (through DevTools, so the page's CSP stays as it is); the serious and critical violations. */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => `${n.target.join(" ")} ${n.html}`).join(", ")}`,
    );
}

/** A screenshot of the step, then axe: no serious or critical violation on what the page shows now. */
export async function checkStep(page: Page, step: string): Promise<void> {
  await shot(page, step);
  expect(await seriousViolations(page), step).toEqual([]);
}

/** Types into the SQL editor as a person does, key by key (completion pops up as it would). */
export async function typeSql(page: Page, text: string): Promise<void> {
  await page.keyboard.type(text, { delay: 15 });
}

/** Accepts the completion offered for `label` (waits for the list to show it, then Enter). */
export async function acceptCompletion(page: Page, label: string): Promise<void> {
  const option = page.locator(".cm-tooltip-autocomplete li", { hasText: label });
  await option.first().waitFor();
  await expect.poll(() => page.locator(".cm-tooltip-autocomplete li[aria-selected]").textContent()).toContain(label);
  // CodeMirror ignores Enter for 75 ms after the list changes (its interactionDelay), so a fast typist's Enter is a newline.
  await page.waitForTimeout(150);
  await page.keyboard.press("Enter");
}

/** A file as the test hands it to the page: its name and its text. */
export interface TestFile {
  name: string;
  text: string;
}

/** Picks files in the upload box as the file chooser would (several at once when given several). */
export async function chooseFiles(page: Page, files: TestFile[]): Promise<void> {
  await page
    .locator('input[type="file"]')
    .setInputFiles(files.map(({ name, text }) => ({ name, mimeType: "text/csv", buffer: Buffer.from(text) })));
}

/**
 * Drops files on the upload box as a person drags them there from their
 * desktop: dragenter, dragover and drop, each with a DataTransfer holding the files.
 */
export async function dropFiles(page: Page, files: TestFile[]): Promise<void> {
  const dropzone = page.locator(".dropzone");
  const dataTransfer = await page.evaluateHandle((files) => {
    // The test's types have no DOM; these are the page's own constructors.
    const window = globalThis as unknown as {
      DataTransfer: new () => { items: { add(file: unknown): void } };
      File: new (parts: string[], name: string, options: { type: string }) => unknown;
    };
    const transfer = new window.DataTransfer();
    for (const { name, text } of files) transfer.items.add(new window.File([text], name, { type: "text/csv" }));
    return transfer;
  }, files);
  await dropzone.dispatchEvent("dragenter", { dataTransfer });
  await dropzone.dispatchEvent("dragover", { dataTransfer });
  // The box shows that it will take the files.
  await page.locator(".dropzone.dragging").waitFor();
  await dropzone.dispatchEvent("drop", { dataTransfer });
  await dataTransfer.dispose();
}

/** Accepts every confirm() the page asks while `act` runs; the questions asked. */
export async function confirming(who: Person, act: () => Promise<void>): Promise<string[]> {
  const asked: string[] = [];
  const accept = (dialog: Dialog) => {
    asked.push(dialog.message());
    void dialog.accept();
  };
  who.page.on("dialog", accept);
  try {
    await act();
  } finally {
    who.page.off("dialog", accept);
  }
  return asked;
}
