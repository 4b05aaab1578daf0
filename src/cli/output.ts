import type { Writable } from "node:stream";
import stringWidth from "string-width";

/** Columns are left-aligned, two spaces apart, like `ls -l` or `kubectl get`. */
const GAP = "  ";
/** A column narrowed to fit the terminal keeps at least this many columns of text (a narrower one all of its own). */
const MIN_COLUMN_WIDTH = 8;
const segmenter = new Intl.Segmenter();

/** How a table is laid out: each shown column's width; the columns beyond them did not fit the terminal. */
export interface TableLayout {
  widths: number[];
  hidden: string[];
}

/**
 * Rows as an aligned table under a header, one line each (without trailing
 * spaces), fitted to `width` when given (a terminal's columns): the widest
 * columns are cut first, each cell ending in "…" where cut, and columns that
 * cannot fit even then are left off (`hidden`). Linear in the cells, and
 * lazy, so a caller can write any number of rows as they come.
 */
export function layoutTable(
  head: string[],
  rows: unknown[][],
  width: number | undefined,
): { layout: TableLayout; lines: Generator<string> } {
  const natural = head.map(displayWidth);
  for (const row of rows)
    for (let i = 0; i < natural.length; i++) natural[i] = Math.max(natural[i]!, displayWidth(cell(row[i])));
  const widths = fitColumns(natural, width);
  const layout = { widths, hidden: head.slice(widths.length) };
  return { layout, lines: tableLines(head, rows, widths) };
}

function* tableLines(head: string[], rows: unknown[][], widths: number[]): Generator<string> {
  const line = (values: unknown[]) =>
    widths
      .map((w, i) => fit(cell(values[i]), w))
      .join(GAP)
      .trimEnd();
  yield line(head);
  for (const row of rows) yield line(row);
}

/** Rows as an aligned table under a header, fitted to the terminal when standard output is one. */
export function table(head: string[], rows: unknown[][]): string {
  const { layout, lines } = layoutTable(head, rows, terminalWidth());
  return `${[...lines].join("\n")}\n${hiddenNote(layout)}`;
}

/** A line naming the columns left off, or nothing. */
export function hiddenNote(layout: TableLayout): string {
  if (layout.hidden.length === 0) return "";
  return `${layout.hidden.length} columns not shown (too wide for the terminal): ${oneLine(layout.hidden.join(", "), 200)}\n`;
}

/** The terminal's width when standard output is a terminal, else undefined. */
export function terminalWidth(): number | undefined {
  return process.stdout.isTTY && process.stdout.columns > 0 ? process.stdout.columns : undefined;
}

/**
 * Column widths within `width`: as many columns as fit at their narrowest
 * (MIN_COLUMN_WIDTH, or less for a narrower column), the first always; then
 * the widest are narrowed to one common cap, the largest that fits, and what
 * is left of the width goes to them from the left.
 */
export function fitColumns(natural: number[], width: number | undefined): number[] {
  if (width === undefined) return natural;
  let count = 0;
  let least = -GAP.length;
  for (const w of natural) {
    const narrowest = Math.min(w, MIN_COLUMN_WIDTH);
    if (count > 0 && least + GAP.length + narrowest > width) break;
    least += GAP.length + narrowest;
    count++;
  }
  const shown = natural.slice(0, count);
  const room = width - GAP.length * (count - 1);
  const total = (cap: number) => shown.reduce((sum, w) => sum + Math.min(w, cap), 0);
  if (total(Infinity) <= room) return shown;
  let low = 1;
  let high = shown.reduce((max, w) => Math.max(max, w), 0);
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (total(mid) <= room) low = mid;
    else high = mid - 1;
  }
  let spare = room - total(low);
  return shown.map((w) => {
    if (w <= low || spare === 0) return Math.min(w, low);
    spare--;
    return low + 1;
  });
}

/** A value as table text; control characters (line breaks, terminal escapes) are written as escapes. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  return String(value).replace(
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => CONTROL[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

const CONTROL: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** Columns a string takes in a terminal (wide East Asian characters and emoji take two). */
function displayWidth(text: string): number {
  return PRINTABLE_ASCII.test(text) ? text.length : stringWidth(text);
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Text padded to `width` columns, or cut to them ending in "…" (whole characters only). */
function fit(text: string, width: number): string {
  if (PRINTABLE_ASCII.test(text))
    return text.length <= width ? text.padEnd(width) : `${text.slice(0, Math.max(0, width - 1))}…`;
  const used = stringWidth(text);
  if (used <= width) return text + " ".repeat(width - used);
  let kept = "";
  let keptWidth = 0;
  for (const { segment } of segmenter.segment(text)) {
    const w = displayWidth(segment);
    if (keptWidth + w > width - 1) break;
    kept += segment;
    keptWidth += w;
  }
  return `${kept}…${" ".repeat(width - 1 - keptWidth)}`;
}

/** Label-value pairs, labels aligned; a pair without a value (a query that never ran has no rows) is left out. */
export function details(pairs: [string, unknown][]): string {
  const text = (value: unknown) => (value === null || value === undefined ? "" : String(value));
  const shown = pairs.filter(([, value]) => text(value) !== "");
  const width = Math.max(...shown.map(([label]) => label.length));
  return shown.map(([label, value]) => `${label.padEnd(width)}  ${text(value)}`.trimEnd()).join("\n") + "\n";
}

/** JSON for scripts: two-space indented; bigints are written as the exact numbers they are. */
export function json(value: unknown): string {
  const text = JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? `\u0000bigint:${v}` : v), 2);
  return `${text.replace(/"\\u0000bigint:(-?\d+)"/g, "$1")}\n`;
}

/** A byte count for people: 1.5 MB. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "";
  if (n < 1000) return `${n} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = n;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** Writes text and waits until the stream has taken it (so an exit never cuts piped output short). */
export function write(stream: Writable, text: string): Promise<void> {
  return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
}

/** Shortens text to one line of at most `max` characters. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
