import type { WorkCounter } from "./work-counter";

/**
 * The fast path of the CSV reader: rows read in place as field ranges of
 * the chunk's text, for the plain RFC 4180 shapes nearly every file has.
 *
 * papaparse stays the reference: this scanner takes a row only when its
 * reading is unambiguous (unquoted fields without quotes in them, quoted
 * fields closed right before a delimiter or the line break, the file's own
 * line ending) and stops at the first row that is anything else, handing
 * the rest of the text to papaparse's reading (csv-fallback.ts: the same
 * rows in linear time; csv-rows.ts does the handing). Both must give the
 * same fields for every row this scanner takes;
 * test/ingest/csv-spans.test.ts checks that on random text.
 *
 * Why: cutting every field into a string and every row into an array is
 * most of an upload's CPU time. Here a field is a range of the text,
 * checked where it lies (value-types.ts reads ranges); a string is only cut
 * for a quoted field with `""` in it, or for a row that is passed on whole
 * (the header, a row with the wrong number of fields, a message).
 */

/** One row's fields: field `i` is `texts[i]` from `starts[i]` to `ends[i]` (exclusive). */
export class RowSpans {
  count = 0;
  /** The chunk's text, or for a quoted field with `""` in it, the field's value on its own. */
  readonly texts: string[] = [];
  starts = new Int32Array(16);
  ends = new Int32Array(16);

  /** Field `index` as a string. */
  field(index: number): string {
    return this.texts[index]!.slice(this.starts[index], this.ends[index]);
  }

  /** Every field as a string. */
  fields(): string[] {
    return Array.from({ length: this.count }, (_, index) => this.field(index));
  }

  /** Makes this row hold `fields` (ranges covering each whole string). */
  fill(fields: readonly string[]): this {
    this.count = 0;
    for (const field of fields) this.push(field, 0, field.length);
    return this;
  }

  push(text: string, start: number, end: number): void {
    const index = this.count++;
    if (index === this.starts.length) {
      const starts = new Int32Array(index * 2);
      const ends = new Int32Array(index * 2);
      starts.set(this.starts);
      ends.set(this.ends);
      this.starts = starts;
      this.ends = ends;
    }
    this.texts[index] = text;
    this.starts[index] = start;
    this.ends[index] = end;
  }
}

/** Takes the rows the scanner reads; returns false to stop reading (for example, enough problems were found). */
export interface SpanSink {
  takeSpans(row: RowSpans): boolean;
}

export type ScanStop =
  /** The text ends inside a row: more text is needed. */
  | "incomplete"
  /** A row the scanner does not take: papaparse reads on from `consumed`. */
  | "unusual"
  /** The sink asked to stop. */
  | "stopped";

const QUOTE = 34;
const LF = 10;
const CR = 13;

/**
 * Reads complete rows from the start of `text` into `sink` for as long as
 * they are plain; `consumed` is where the first row not taken begins.
 * `newline` is the file's line ending; only "\n" and "\r\n" are scanned
 * (old Mac "\r" files go to papaparse whole).
 *
 * A row without a double quote in it is split with the platform's
 * `indexOf` (a native search, not a JavaScript loop over characters);
 * inside it, a CR or LF that is not the line ending is data, as papaparse
 * reads it. A row with a quote in it is read character by character.
 *
 * Each search starts where the last one of its kind stopped, or later, and
 * the next quote and the next delimiter are kept across rows, so every
 * character is looked at a bounded number of times: a file whose rows have
 * no delimiter left does not search the rest of the text on every row.
 * `work`, when given, is told how many characters the searches covered.
 */
export function scanPlainRows(
  text: string,
  delimiter: string,
  newline: "\n" | "\r\n",
  row: RowSpans,
  sink: SpanSink,
  work?: WorkCounter,
): { consumed: number; stop: ScanStop } {
  const length = text.length;
  const delimiterCode = delimiter.charCodeAt(0);
  const crlf = newline === "\r\n";
  let rowStart = 0;
  // The first quote and the first delimiter at or after rowStart (length when there is none); looked up again once passed.
  let nextQuote = -1;
  let nextDelimiter = -1;
  let scanned = 0;
  let stop: ScanStop;
  for (;;) {
    const lineEnd = text.indexOf(newline, rowStart);
    if (lineEnd < 0) {
      scanned += length - rowStart;
      stop = "incomplete";
      break;
    }
    scanned += lineEnd + newline.length - rowStart;
    if (nextQuote < rowStart) {
      const found = text.indexOf('"', rowStart);
      nextQuote = found < 0 ? length : found;
      scanned += nextQuote - rowStart + 1;
    }
    let next: number;
    if (nextQuote > lineEnd) {
      // papaparse keeps a CR before LF in an LF file as data, and csv-rows.ts then drops it: papaparse reads those.
      if (!crlf && text.charCodeAt(lineEnd - 1) === CR && lineEnd > rowStart) {
        stop = "unusual";
        break;
      }
      row.count = 0;
      let at = rowStart;
      for (;;) {
        if (nextDelimiter < at) {
          const found = text.indexOf(delimiter, at);
          nextDelimiter = found < 0 ? length : found;
          scanned += nextDelimiter - at + 1;
        }
        if (nextDelimiter >= lineEnd) break;
        row.push(text, at, nextDelimiter);
        at = nextDelimiter + 1;
      }
      row.push(text, at, lineEnd);
      next = lineEnd + newline.length;
    } else {
      next = readQuotedRow(text, delimiterCode, crlf, rowStart, row);
      if (next === INCOMPLETE) {
        scanned += length - rowStart;
        stop = "incomplete";
        break;
      }
      if (next < INCOMPLETE) {
        scanned += unusualAt(next) - rowStart + 1;
        stop = "unusual";
        break;
      }
      scanned += next - rowStart;
    }
    rowStart = next;
    if (!sink.takeSpans(row)) {
      stop = "stopped";
      break;
    }
  }
  if (work) work.scanned += scanned;
  return { consumed: rowStart, stop };
}

const INCOMPLETE = -1;
// readQuotedRow's answer for a row that is not plain encodes where it found out (for the work count), below INCOMPLETE.
const UNUSUAL_BASE = -2;
const unusual = (at: number) => UNUSUAL_BASE - at;
const unusualAt = (answer: number) => UNUSUAL_BASE - answer;

/**
 * Reads the row starting at `from` character by character; returns where
 * the next row starts, INCOMPLETE when the text ends first, or `unusual(at)`
 * when the row is not plain RFC 4180 (papaparse reads it instead), `at`
 * being the last character it looked at.
 */
function readQuotedRow(text: string, delimiter: number, crlf: boolean, from: number, row: RowSpans): number {
  const length = text.length;
  row.count = 0;
  let at = from;
  for (;;) {
    let code: number;
    if (at < length && text.charCodeAt(at) === QUOTE) {
      const start = at + 1;
      let close = text.indexOf('"', start);
      let escaped = false;
      while (close >= 0 && text.charCodeAt(close + 1) === QUOTE) {
        escaped = true;
        close = text.indexOf('"', close + 2);
      }
      // Without the character after the closing quote, the field may not be over ("" split in two).
      if (close < 0 || close + 1 >= length) return INCOMPLETE;
      if (escaped) {
        const value = text.slice(start, close).replaceAll('""', '"');
        row.push(value, 0, value.length);
      } else {
        row.push(text, start, close);
      }
      at = close + 1;
      code = text.charCodeAt(at);
    } else {
      const start = at;
      code = -1;
      for (; at < length; at++) {
        code = text.charCodeAt(at);
        if (code === delimiter || code === LF || code === CR || code === QUOTE) break;
      }
      if (at >= length) return INCOMPLETE;
      if (code === QUOTE) return unusual(at);
      row.push(text, start, at);
    }
    if (code === delimiter) {
      at++;
      continue;
    }
    // The line ending; a CR or LF that is not one is data to papaparse, so it reads such rows.
    if (crlf) {
      if (code !== CR) return unusual(at);
      if (at + 1 >= length) return INCOMPLETE;
      return text.charCodeAt(at + 1) === LF ? at + 2 : unusual(at + 1);
    }
    if (code !== LF) return unusual(at);
    // csv-rows.ts drops a CR that ends the last field of papaparse's rows in an LF file, quoted or not: papaparse reads it.
    const last = row.count - 1;
    const lastEnd = row.ends[last]!;
    return lastEnd > row.starts[last]! && row.texts[last]!.charCodeAt(lastEnd - 1) === CR ? unusual(at) : at + 1;
  }
}
