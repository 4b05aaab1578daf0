import { otherFittingDelimiter } from "./csv-delimiter";
import type { Newline } from "./csv-fallback";
import type { Column } from "./data-schema";
import { clipValue, quoteForMessage } from "./quote";
import { charCodes, isDateText, isDoubleText, isTimestampText, valueCheck } from "./value-types";

/**
 * What an upload's message says beyond its verdict: why a refused file was
 * refused when the cause is not in the rows' problems (JSON sent as CSV, the
 * wrong delimiter), and what was done silently to an accepted one (header
 * names changed, a first row that looks like data taken as the header). All
 * of it is read from the file's first `HEAD_CHARS` characters and the header
 * row, so it costs no more than reading them.
 */

/** How much of the file's start the notes look at: the delimiter detection's sample (csv-rows.ts) and more. */
export const HEAD_CHARS = 20 * 1024;
/** How many changed names or header cells a message lists. */
const MOST_LISTED = 5;
const SCHEMA_WITH = (option: string) => `{"DataSpecification": {"DataOptions": {${option}}}}`;

/** "JSON" or "NDJSON" when the file's start looks like it rather than CSV, else null. */
export function jsonLooking(head: string): "JSON" | "NDJSON" | null {
  const text = head.replace(/^\uFEFF?\s*/, "");
  if (/^\[\s*(?:[{["\]]|-?\d|true\b|false\b|null\b|$)/.test(text)) return "JSON";
  if (!/^\{\s*(?:"|\}|$)/.test(text)) return null;
  const lineEnd = text.search(/[\r\n]/);
  const firstLine = (lineEnd < 0 ? text : text.slice(0, lineEnd)).trimEnd();
  return firstLine.endsWith("}") && lineEnd >= 0 ? "NDJSON" : "JSON";
}

/** The sentence that says a file looks like JSON, not CSV; "" when it does not. */
export function jsonNote(head: string): string {
  const kind = jsonLooking(head);
  if (!kind) return "";
  const first = head.replace(/^\uFEFF?\s*/, "")[0]!;
  return (
    `The file looks like ${kind === "NDJSON" ? "NDJSON (one JSON object a line)" : "JSON"}, not CSV ` +
    `(it starts with "${first}"): only CSV files are read, so convert it to CSV (a header row, then one line a row) ` +
    "and upload it again."
  );
}

/**
 * The sentence that says a file read with `used` looks written with another
 * delimiter, and how to declare it; "" when no other candidate fits.
 * `given`: the Schema named `used`; otherwise it was detected, which a
 * TableDefinition's number of columns decides.
 */
export function delimiterNote(
  head: string,
  complete: boolean,
  used: string,
  given: boolean,
  tableColumns: number | undefined,
): string {
  const other = otherFittingDelimiter(head, newlineOf(head), complete, used);
  if (!other) return "";
  const looks = `The file looks ${JSON.stringify(other.delimiter)}-delimited (${other.fields} fields a row)`;
  const declare = `declare it with ${SCHEMA_WITH(`"Delimiter": ${JSON.stringify(other.delimiter)}`)} in the Schema`;
  if (given)
    return `${looks}, but was read with the Schema's Delimiter ${JSON.stringify(used)}: ${declare}, or leave Delimiter out to have it detected.`;
  const why =
    tableColumns !== undefined && tableColumns !== other.fields
      ? `, as the TableDefinition has ${tableColumns} column${tableColumns === 1 ? "" : "s"}`
      : "";
  return `${looks}, but was read with ${JSON.stringify(used)}${why}: ${declare}, with as many columns as the file has.`;
}

/**
 * Warnings about the header row of an accepted file: names changed to make
 * them distinct and non-blank (only where the table was generated from the
 * header), and a first row that looks like data.
 */
export function headerWarnings(header: readonly string[], columns: readonly Column[], generated: boolean): string[] {
  const warnings: string[] = [];
  if (generated) {
    const renamed = renamedColumns(header, columns);
    if (renamed) warnings.push(renamed);
  }
  if (header.length === columns.length && looksLikeData(header, columns)) {
    const cells = header.slice(0, MOST_LISTED).map((cell) => quoteForMessage(clipValue(cell)));
    const more = header.length > MOST_LISTED ? ", …" : "";
    const taken = generated ? "and its values became the column names" : "and it was not loaded";
    warnings.push(
      `The first row was taken as the header row, ${taken}, but it looks like data (${cells.join(", ")}${more}): ` +
        `if the file has no header row, upload it again with ${SCHEMA_WITH(`"Header": false`)} in the Schema.`,
    );
  }
  return warnings;
}

/** The sentence listing header names that were changed (table-check.ts's namesFromHeader), or "" when none was. */
function renamedColumns(header: readonly string[], columns: readonly Column[]): string {
  const changes: string[] = [];
  let count = 0;
  columns.forEach((column, index) => {
    const written = (header[index] ?? "").trim();
    if (written === column.Name) return;
    count++;
    if (changes.length < MOST_LISTED) {
      const was = written === "" ? "(blank)" : quoteForMessage(clipValue(written));
      changes.push(`column ${index + 1} ${was} became ${quoteForMessage(column.Name)}`);
    }
  });
  if (count === 0) return "";
  const more = count > changes.length ? `, and ${count - changes.length} more` : "";
  return (
    `${count === 1 ? "1 header name was" : `${count} header names were`} changed, as a table needs distinct, ` +
    `non-blank column names (letter case ignored): ${changes.join(", ")}${more}.`
  );
}

/**
 * Whether a header row reads as a data row: every cell a number, date or
 * timestamp; or, as DuckDB's CSV sniffer decides, every column of a type
 * other than STRING has a header cell of that type (and there is one).
 * A header such as `country,2019,2020` over numbers is indistinguishable
 * from data, and is warned about too: the warning only says what to do.
 */
function looksLikeData(header: readonly string[], columns: readonly Column[]): boolean {
  const codes = header.map((cell) => charCodes(cell));
  const isValue = (i: number) =>
    header[i] !== "" &&
    [isDoubleText, isDateText, isTimestampText].some((check) => check(codes[i]!, 0, header[i]!.length));
  if (header.every((_, i) => isValue(i))) return true;
  let typed = 0;
  for (let i = 0; i < columns.length; i++) {
    const type = columns[i]!.DataType.DataType;
    if (type === "STRING" || header[i]!.trim() === "") continue;
    if (!valueCheck(type)(codes[i]!, 0, header[i]!.length)) return false;
    typed++;
  }
  return typed > 0;
}

/** A file's line ending, from its first line break (quotes are not looked at: a note needs no more). */
function newlineOf(text: string): Newline {
  const lf = text.indexOf("\n");
  const cr = text.indexOf("\r");
  if (cr >= 0 && (lf < 0 || cr < lf)) return text[cr + 1] === "\n" ? "\r\n" : "\r";
  return "\n";
}
