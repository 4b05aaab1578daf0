import type { WorkCounter } from "./work-counter";

/**
 * The reader for every row the fast path (csv-spans.ts) does not take:
 * papaparse's `Papa.Parser#parse` (5.7.1) for the settings this service
 * uses (a one-character delimiter, `"` as quote and escape, no comments,
 * header or preview), step for step, except where papaparse's work grows
 * faster than its input.
 *
 * Why not papaparse itself: for each quote inside a quoted field that is not
 * followed by the delimiter or the line break, papaparse checks for
 * "spaces, then the delimiter" by trimming all the text up to the next
 * delimiter, so a field with k such quotes before m spaces costs k × m
 * (quadratic in the row: hours at the 8 MiB cap), and it keeps one error
 * object per such quote (memory for millions). Here
 * that check stops at the first character that is not a space, and a row's
 * quoting errors are kept once. Everything else is papaparse's loop, so the
 * rows, the cursor and which rows are malformed are the same:
 * test/ingest/csv-fallback.test.ts compares the two on random text.
 * papaparse stays the reference.
 */

/** The fields of one row (indexes, ascending) that were written `""`: the empty string, where an unquoted empty field is NULL. */
export interface QuotedEmpty {
  row: number;
  fields: number[];
}

/** What `parse` returns: Papa.Parser's result, with one error per malformed row (rows counted from 0). */
export interface ParsedRows {
  data: string[][];
  errors: readonly { row: number }[];
  meta: { cursor: number };
  /** The rows (ascending) with fields written `""`. papaparse's strings cannot tell, so its own parser leaves it out. */
  quotedEmpty?: readonly QuotedEmpty[];
}

/** Papa.Parser's `parse` as the CSV reader calls it; Papa.Parser itself fits (tests use it as the reference). */
export interface RowParser {
  parse(input: string, baseIndex: number, ignoreLastRow: boolean): ParsedRows;
}

export type Newline = "\n" | "\r\n" | "\r";

const QUOTE = 34;
const ESCAPED_QUOTES = /""/g;

/** Papa.Parser's `parse`, for a one-character delimiter, in time linear in the input. */
export class FallbackParser implements RowParser {
  constructor(
    private readonly delimiter: string,
    private readonly newline: Newline,
    private readonly work?: WorkCounter,
  ) {}

  parse(input: string, baseIndex: number, ignoreLastRow: boolean): ParsedRows {
    const { delimiter, newline } = this;
    const delimiterCode = delimiter.charCodeAt(0);
    const newlineLength = newline.length;
    const inputLength = input.length;
    const data: string[][] = [];
    const errors: { row: number }[] = [];
    const quotedEmpty: QuotedEmpty[] = [];
    let row: string[] = [];
    let cursor = 0;
    let lastCursor = 0;
    let scanned = 0;

    const done = (): ParsedRows => {
      if (this.work) this.work.scanned += scanned;
      // The row left unfinished (ignoreLastRow) is not in `data`.
      if (quotedEmpty.at(-1)?.row === data.length) quotedEmpty.pop();
      return { data, errors, meta: { cursor: lastCursor + baseIndex }, quotedEmpty };
    };
    const find = (what: string, from: number): number => {
      const found = input.indexOf(what, from);
      scanned += (found < 0 ? inputLength : found + 1) - from;
      return found;
    };
    // papaparse lists each bad quote; the reader only needs the rows.
    const flagRow = () => {
      if (errors.at(-1)?.row !== data.length) errors.push({ row: data.length });
    };
    const saveRow = (newCursor: number) => {
      cursor = newCursor;
      data.push(row);
      lastCursor = cursor;
      row = [];
      nextNewline = find(newline, cursor);
    };
    const quotedValue = (from: number, to: number) => {
      scanned += 2 * (to - from);
      // Papa's reading ends here; which fields were "" is this parser's own addition.
      if (from === to) {
        const last = quotedEmpty.at(-1);
        if (last?.row === data.length) last.fields.push(row.length);
        else quotedEmpty.push({ row: data.length, fields: [row.length] });
      }
      return input.substring(from, to).replace(ESCAPED_QUOTES, '"');
    };
    // papaparse: the length of `input.substring(quote + 1, index)` if it is not empty and only spaces (as String#trim
    // sees them), else 0 (also for index -1). Stopping at the first other character keeps this linear.
    const spacesAfter = (quote: number, index: number): number => {
      if (index <= quote + 1) return 0;
      let at = quote + 1;
      while (at < index && isTrimmedByJs(input.charCodeAt(at))) at++;
      scanned += at - quote;
      return at === index ? index - quote - 1 : 0;
    };
    const finish = (value?: string): ParsedRows => {
      if (ignoreLastRow) return done();
      if (value === undefined) {
        value = input.substring(cursor);
        scanned += inputLength - cursor;
      }
      row.push(value);
      cursor = inputLength;
      data.push(row);
      lastCursor = cursor;
      return done();
    };

    if (inputLength === 0) return done();
    if (find('"', 0) === -1) {
      // papaparse's fast mode: no quotes at all.
      const lines = input.split(newline);
      scanned += 2 * inputLength;
      for (let index = 0; index < lines.length; index++) {
        const line = lines[index]!;
        cursor += line.length;
        if (index !== lines.length - 1) cursor += newlineLength;
        else if (ignoreLastRow) return done();
        data.push(line.split(delimiter));
        lastCursor = cursor;
      }
      return done();
    }

    let nextDelimiter = find(delimiter, cursor);
    let nextNewline = find(newline, cursor);
    for (;;) {
      if (input.charCodeAt(cursor) === QUOTE) {
        let quote = cursor;
        cursor++;
        for (;;) {
          quote = find('"', quote + 1);
          if (quote === -1) {
            // A quoted field that is never closed (papaparse: MissingQuotes).
            if (!ignoreLastRow) flagRow();
            return finish();
          }
          if (quote === inputLength - 1) return finish(quotedValue(cursor, quote));
          if (input.charCodeAt(quote + 1) === QUOTE) {
            quote++;
            continue;
          }
          if (nextDelimiter !== -1 && nextDelimiter < quote + 1) nextDelimiter = find(delimiter, quote + 1);
          if (nextNewline !== -1 && nextNewline < quote + 1) nextNewline = find(newline, quote + 1);
          const checkUpTo = nextNewline === -1 ? nextDelimiter : Math.min(nextDelimiter, nextNewline);
          const afterSpaces = quote + 1 + spacesAfter(quote, checkUpTo);
          if (input.charCodeAt(afterSpaces) === delimiterCode) {
            row.push(quotedValue(cursor, quote));
            cursor = afterSpaces + 1;
            if (nextDelimiter !== -1 && nextDelimiter < cursor) nextDelimiter = find(delimiter, cursor);
            if (nextNewline !== -1 && nextNewline < cursor) nextNewline = find(newline, cursor);
            break;
          }
          const beforeNewline = quote + 1 + spacesAfter(quote, nextNewline);
          if (input.startsWith(newline, beforeNewline)) {
            row.push(quotedValue(cursor, quote));
            saveRow(beforeNewline + newlineLength);
            if (nextDelimiter !== -1 && nextDelimiter < cursor) nextDelimiter = find(delimiter, cursor);
            break;
          }
          // A quote in the field that neither closes it nor is escaped (papaparse: InvalidQuotes); the field goes on.
          flagRow();
          quote++;
        }
        continue;
      }
      if (nextDelimiter !== -1 && (nextDelimiter < nextNewline || nextNewline === -1)) {
        row.push(input.substring(cursor, nextDelimiter));
        scanned += nextDelimiter - cursor;
        cursor = nextDelimiter + 1;
        nextDelimiter = find(delimiter, cursor);
        continue;
      }
      if (nextNewline !== -1) {
        row.push(input.substring(cursor, nextNewline));
        scanned += nextNewline - cursor;
        saveRow(nextNewline + newlineLength);
        continue;
      }
      break;
    }
    return finish();
  }
}

/** Whether String#trim removes this UTF-16 code unit: ECMAScript's WhiteSpace and LineTerminator. */
export function isTrimmedByJs(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
