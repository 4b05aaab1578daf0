import Table from "cli-table3";
import type { Writable } from "node:stream";

/** Borderless, left-aligned columns two spaces apart, like `ls -l` or `kubectl get`. */
const PLAIN_CHARS = {
  top: "",
  "top-mid": "",
  "top-left": "",
  "top-right": "",
  bottom: "",
  "bottom-mid": "",
  "bottom-left": "",
  "bottom-right": "",
  left: "",
  "left-mid": "",
  mid: "",
  "mid-mid": "",
  right: "",
  "right-mid": "",
  middle: "  ",
};

/** Rows as an aligned table under a header; each line ends without trailing spaces. */
export function table(head: string[], rows: unknown[][]): string {
  const t = new Table({
    head,
    chars: PLAIN_CHARS,
    style: { head: [], border: [], "padding-left": 0, "padding-right": 0, compact: true },
    wordWrap: false,
  });
  for (const row of rows) t.push(row.map(cell));
  return `${t
    .toString()
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")}\n`;
}

/** Label-value pairs, labels aligned; a pair without a value (a query that never ran has no rows) is left out. */
export function details(pairs: [string, unknown][]): string {
  const shown = pairs.filter(([, value]) => cell(value) !== "");
  const width = Math.max(...shown.map(([label]) => label.length));
  return shown.map(([label, value]) => `${label.padEnd(width)}  ${cell(value)}`.trimEnd()).join("\n") + "\n";
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  return String(value);
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
