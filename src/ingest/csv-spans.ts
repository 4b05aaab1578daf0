/**
 * The fast path of the CSV reader: rows read in place as field ranges of
 * the chunk's text, for the plain RFC 4180 shapes nearly every file has.
 *
 * papaparse (csv-rows.ts) stays the reference: this scanner takes a row
 * only when its reading is unambiguous (unquoted fields without quotes in
 * them, quoted fields closed right before a delimiter or the line break,
 * the file's own line ending) and stops at the first row that is anything
 * else, handing the rest of the text to papaparse. Both must give the same
 * fields for every row this scanner takes; test/ingest/csv-spans.test.ts
 * checks that on random text.
 *
 * Why: cutting every field into a string and every row into an array is
 * most of an upload's CPU time (a 78 MB file has 6 M fields). Here a field
 * is a range of the text, checked where it lies (value-types.ts reads
 * ranges); a string is only cut for a quoted field with `""` in it, or for
 * a row that is passed on whole (the header, a row with the wrong number of
 * fields, a message).
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
 * Fields are found with the platform's `indexOf` (a native search, several
 * times faster than reading character by character in JavaScript): the
 * next delimiter, the next line ending and the next quote. As papaparse
 * reads them, a CR or LF that is not the line ending is data.
 */
export function scanPlainRows(
  text: string,
  delimiter: string,
  newline: "\n" | "\r\n",
  row: RowSpans,
  sink: SpanSink,
): { consumed: number; stop: ScanStop } {
  const length = text.length;
  const crlf = newline === "\r\n";
  const delimiterCode = delimiter.charCodeAt(0);
  let rowStart = 0;
  // The next line ending and the next quote at or after where they were last looked for (length: none).
  let lineEnd = -1;
  let quote = -1;
  let at = 0;
  for (;;) {
    row.count = 0;
    // One field per turn.
    for (;;) {
      if (text.charCodeAt(at) === QUOTE && at < length) {
        const from = at + 1;
        let close = text.indexOf('"', from);
        let escaped = false;
        while (close >= 0 && text.charCodeAt(close + 1) === QUOTE) {
          escaped = true;
          close = text.indexOf('"', close + 2);
        }
        // Without the character after the closing quote, the field may not be over ("" split in two).
        if (close < 0 || close + 1 >= length) return { consumed: rowStart, stop: "incomplete" };
        if (escaped) {
          const value = text.slice(from, close).replaceAll('""', '"');
          row.push(value, 0, value.length);
        } else {
          row.push(text, from, close);
        }
        at = close + 1;
        const code = text.charCodeAt(at);
        if (code === delimiterCode) {
          at++;
          continue;
        }
        if (crlf ? code === CR && text.charCodeAt(at + 1) === LF : code === LF) {
          at += newline.length;
          break;
        }
        if (crlf && code === CR && at + 1 >= length) return { consumed: rowStart, stop: "incomplete" };
        // Anything else after a closing quote (spaces, a stray CR) is papaparse's to read.
        return { consumed: rowStart, stop: "unusual" };
      }
      if (lineEnd < at) {
        lineEnd = text.indexOf(newline, at);
        if (lineEnd < 0) return { consumed: rowStart, stop: "incomplete" };
      }
      if (quote < at) {
        quote = text.indexOf('"', at);
        if (quote < 0) quote = length;
      }
      const found = text.indexOf(delimiter, at);
      const end = found >= 0 && found < lineEnd ? found : lineEnd;
      // A quote inside an unquoted field: papaparse keeps it as data, but this scanner leaves such rows to it.
      if (quote < end) return { consumed: rowStart, stop: "unusual" };
      row.push(text, at, end);
      if (end !== lineEnd) {
        at = end + 1;
        continue;
      }
      // papaparse keeps a CR before LF in an LF file, and csv-rows.ts then drops it: papaparse reads those rows.
      if (!crlf && end > at && text.charCodeAt(end - 1) === CR) return { consumed: rowStart, stop: "unusual" };
      at = lineEnd + newline.length;
      break;
    }
    rowStart = at;
    if (!sink.takeSpans(row)) return { consumed: rowStart, stop: "stopped" };
  }
}
