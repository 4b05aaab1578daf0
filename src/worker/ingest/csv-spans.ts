import { charCodes, type CharCodes } from "./value-types";
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
 * for a row that is passed on whole (the header, a row with the wrong
 * number of fields, a message).
 */

/**
 * One row's fields: field `i` is `text` from `starts[i]` to `ends[i]`
 * (exclusive). A quoted field with `""` in it is its range between the
 * quotes as written (`escaped[i]` is 1): `field` halves the quotes when a
 * string is wanted. The type checks read that range as it is, in `codes`,
 * since every type but STRING refuses a `"`, written once or twice, and
 * such a field is never empty.
 */
export class RowSpans {
  count = 0;
  /** The chunk's text, or the fields of a row filled from strings, joined. */
  text = "";
  /** `text`'s code units (value-types.ts `charCodes`), which the type checks read; may run on past the text. */
  codes: CharCodes = new Uint16Array(0);
  private codesArray: CharCodes = new Uint16Array(0);
  starts = new Int32Array(16);
  ends = new Int32Array(16);
  escaped = new Uint8Array(16);

  /** Field `index` as a string. */
  field(index: number): string {
    const value = this.text.slice(this.starts[index], this.ends[index]);
    return this.escaped[index] === 1 ? value.replaceAll('""', '"') : value;
  }

  /** Every field as a string. */
  fields(): string[] {
    return Array.from({ length: this.count }, (_, index) => this.field(index));
  }

  /** Makes the ranges refer to `text`. */
  setText(text: string): void {
    this.text = text;
    const codes = charCodes(text, this.codesArray);
    this.codes = codes;
    // An array for a row of megabytes is not kept for the rest of the upload.
    this.codesArray = codes.length <= KEPT_CODES ? codes : this.codesArray;
  }

  /** Makes this row hold `fields`. */
  fill(fields: readonly string[]): this {
    this.setText(fields.join(""));
    this.count = 0;
    let at = 0;
    for (const field of fields) this.push(at, (at += field.length), false);
    return this;
  }

  /** Adds a field: `text` from `start` to `end`. */
  push(start: number, end: number, escaped: boolean): void {
    const index = this.count++;
    if (index === this.starts.length) this.grow();
    this.starts[index] = start;
    this.ends[index] = end;
    this.escaped[index] = escaped ? 1 : 0;
  }

  private grow(): void {
    const size = this.starts.length * 2;
    const starts = new Int32Array(size);
    const ends = new Int32Array(size);
    const escaped = new Uint8Array(size);
    starts.set(this.starts);
    ends.set(this.ends);
    escaped.set(this.escaped);
    this.starts = starts;
    this.ends = ends;
    this.escaped = escaped;
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
// The largest code array a RowSpans keeps between texts: a step's text, and then some.
const KEPT_CODES = 256 * 1024;

/**
 * Reads complete rows from the start of `text` into `sink` for as long as
 * they are plain; `consumed` is where the first row not taken begins.
 * `newline` is the file's line ending; only "\n" and "\r\n" are scanned
 * (old Mac "\r" files go to papaparse whole).
 *
 * Every field is found with the platform's `indexOf` (a native search, not
 * a JavaScript loop over characters): an unquoted field ends at the next
 * delimiter or line ending, a quoted one at its closing quote. Inside an
 * unquoted field, a CR or LF that is not the line ending is data, as
 * papaparse reads it.
 *
 * The next quote, delimiter and line ending are kept across fields and rows
 * and looked up again only once passed, each search starting where the last
 * one of its kind stopped or later, so every character is looked at a
 * bounded number of times: a file whose rows have no delimiter left does
 * not search the rest of the text on every row. The text's code units are
 * copied out once for the type checks (`RowSpans.codes`). `work`, when
 * given, is told how many characters the copy and the searches covered.
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
  // The first quote, delimiter and line ending at or after where they were last looked for (length when there is none).
  let nextQuote = -1;
  let nextDelimiter = -1;
  let lineEnd = -1;
  let stop: ScanStop;
  // Made before the loop: V8 compiles the loop on its own (on-stack replacement) and would leave a literal after it
  // out of that code, leaving it through a deoptimization on every call.
  const result = { consumed: 0, stop: "incomplete" as ScanStop };
  row.setText(text);
  let scanned = length;
  rows: for (;;) {
    row.count = 0;
    let at = rowStart;
    // Where the row ends (the next row starts), once its last field is read.
    let next: number;
    for (;;) {
      if (nextQuote < at) {
        const found = text.indexOf('"', at);
        nextQuote = found < 0 ? length : found;
        scanned += nextQuote - at + 1;
      }
      if (nextQuote === at && at < length) {
        let close = text.indexOf('"', at + 1);
        let escaped = false;
        while (close >= 0 && text.charCodeAt(close + 1) === QUOTE) {
          escaped = true;
          close = text.indexOf('"', close + 2);
        }
        if (close < 0) {
          scanned += length - at;
          stop = "incomplete";
          break rows;
        }
        scanned += close - at + 1;
        row.push(at + 1, close, escaped);
        nextQuote = close;
        at = close + 1;
        // Without the character after the closing quote, the field may not be over ("" split in two).
        if (at >= length) {
          stop = "incomplete";
          break rows;
        }
        const code = text.charCodeAt(at);
        if (code === delimiterCode) {
          at++;
          continue;
        }
        // The line ending; a CR or LF that is not one is data to papaparse, so it reads such rows.
        if (crlf) {
          if (code !== CR) {
            stop = "unusual";
            break rows;
          }
          if (at + 1 >= length) {
            stop = "incomplete";
            break rows;
          }
          if (text.charCodeAt(at + 1) !== LF) {
            stop = "unusual";
            break rows;
          }
          next = at + 2;
        } else {
          if (code !== LF) {
            stop = "unusual";
            break rows;
          }
          next = at + 1;
        }
        break;
      }
      if (lineEnd < at) {
        const found = text.indexOf(newline, at);
        lineEnd = found < 0 ? length : found;
        scanned += lineEnd - at + newline.length;
      }
      if (lineEnd === length) {
        stop = "incomplete";
        break rows;
      }
      if (nextDelimiter < at) {
        const found = text.indexOf(delimiter, at);
        nextDelimiter = found < 0 ? length : found;
        scanned += nextDelimiter - at + 1;
      }
      const end = nextDelimiter < lineEnd ? nextDelimiter : lineEnd;
      // A quote inside an unquoted field: papaparse reads the row.
      if (nextQuote < end) {
        stop = "unusual";
        break rows;
      }
      row.push(at, end, false);
      if (end === lineEnd) {
        next = lineEnd + newline.length;
        break;
      }
      at = end + 1;
    }
    // csv-rows.ts drops a CR that ends the last field of papaparse's rows in an LF file, quoted or not: papaparse reads it.
    if (!crlf) {
      const last = row.count - 1;
      const lastEnd = row.ends[last]!;
      if (lastEnd > row.starts[last]! && text.charCodeAt(lastEnd - 1) === CR) {
        stop = "unusual";
        break;
      }
    }
    rowStart = next;
    if (!sink.takeSpans(row)) {
      stop = "stopped";
      break;
    }
  }
  if (work) work.scanned += scanned;
  result.consumed = rowStart;
  result.stop = stop;
  return result;
}
