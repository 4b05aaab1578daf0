import { SURE_PATTERN_CHARACTERS, charCodes, type CharCodes } from "./value-types";
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
 * such a field is never empty. `quoted[i]` is 1 for a field written in
 * quotes: an empty one is the empty string, an unquoted empty one NULL
 * (`isNull`), as PostgreSQL's CSV format reads them.
 */
export class RowSpans {
  count = 0;
  /** The chunk's text, or the fields of a row filled from strings, joined. */
  text = "";
  private textCodes: CharCodes = new Uint16Array(0);
  private codesArray: CharCodes = new Uint16Array(0);
  // Whether textCodes are still those of an earlier text.
  private codesStale = false;
  starts = new Int32Array(16);
  ends = new Int32Array(16);
  escaped = new Uint8Array(16);
  quoted = new Uint8Array(16);

  /** Field `index` as a string. */
  field(index: number): string {
    const value = this.text.slice(this.starts[index], this.ends[index]);
    return this.escaped[index] === 1 ? value.replaceAll('""', '"') : value;
  }

  /** Whether field `index` is empty and unquoted: NULL, where a quoted `""` is the empty string. */
  isNull(index: number): boolean {
    return this.starts[index] === this.ends[index] && this.quoted[index] === 0;
  }

  /** Field `index` as a string, or null when it is NULL (`isNull`). */
  value(index: number): string | null {
    return this.isNull(index) ? null : this.field(index);
  }

  /** Every field as a string. */
  fields(): string[] {
    return Array.from({ length: this.count }, (_, index) => this.field(index));
  }

  /** The indexes of the fields written `""` (ascending), for a row passed on as strings; undefined when none. */
  quotedEmptyFields(): number[] | undefined {
    let found: number[] | undefined;
    for (let index = 0; index < this.count; index++)
      if (this.starts[index] === this.ends[index] && this.quoted[index] === 1) (found ??= []).push(index);
    return found;
  }

  /**
   * `text`'s code units (value-types.ts `charCodes`), which the type checks
   * read, copied out when first asked for (rows taken whole by `SureRows`
   * need none); they may run on past the text.
   */
  get codes(): CharCodes {
    if (this.codesStale) {
      const codes = charCodes(this.text, this.codesArray);
      this.textCodes = codes;
      // An array for a row of megabytes is not kept for the rest of the upload.
      if (codes.length <= KEPT_CODES) this.codesArray = codes;
      this.codesStale = false;
    }
    return this.textCodes;
  }

  /** Makes the ranges refer to `text`. */
  setText(text: string): void {
    this.text = text;
    this.codesStale = true;
  }

  /** Makes this row hold `fields`, those at `quotedEmpty` (ascending indexes) written `""`. */
  fill(fields: readonly string[], quotedEmpty?: readonly number[]): this {
    this.setText(fields.join(""));
    this.count = 0;
    let at = 0;
    let next = 0;
    for (let index = 0; index < fields.length; index++) {
      const quoted = quotedEmpty !== undefined && quotedEmpty[next] === index;
      if (quoted) next++;
      this.push(at, (at += fields[index]!.length), false, quoted);
    }
    return this;
  }

  /** Adds a field: `text` from `start` to `end`, `quoted` when it was written in quotes. */
  push(start: number, end: number, escaped: boolean, quoted: boolean): void {
    const index = this.count++;
    if (index === this.starts.length) this.grow();
    this.starts[index] = start;
    this.ends[index] = end;
    this.escaped[index] = escaped ? 1 : 0;
    this.quoted[index] = quoted ? 1 : 0;
  }

  private grow(): void {
    const size = this.starts.length * 2;
    const starts = new Int32Array(size);
    const ends = new Int32Array(size);
    const escaped = new Uint8Array(size);
    const quoted = new Uint8Array(size);
    starts.set(this.starts);
    ends.set(this.ends);
    escaped.set(this.escaped);
    quoted.set(this.quoted);
    this.starts = starts;
    this.ends = ends;
    this.escaped = escaped;
    this.quoted = quoted;
  }
}

/** Takes the rows the scanner reads; returns false to stop reading (for example, enough problems were found). */
export interface SpanSink {
  takeSpans(row: RowSpans): boolean;
  /** The rows the sink would surely take as they are, for `SureRows`; undefined when there are none just now. */
  sureRow?(): SureRow | undefined;
  /** Takes a row that matched `sureRow`, as `takeSpans` would have taken it. */
  takeSureRow?(): boolean;
}

/**
 * A column's values that surely leave a sink as it was: those `pattern`
 * matches (a regex source, for an unquoted value; null: any value, quoted
 * or not), and the empty field when `empty`.
 */
export interface SureValues {
  pattern: string | null;
  empty: boolean;
}

/** Per column, what a row must hold for a sink to surely take it as it is; `version` changes whenever `values` do. */
export interface SureRow {
  version: number;
  values: readonly SureValues[];
}

/**
 * The fast path of the fast path: a row that is surely plain and that the
 * sink surely takes as it is (no problem, nothing new inferred) is taken
 * whole with one native regex match, its fields never cut out nor checked
 * one by one. The regex is made from the sink's `sureRow` (value-types.ts
 * has the sure patterns) and made again when that changes. It never lets a
 * CR or LF into a field, so a match or a miss never looks past the line:
 * a row it misses is read as before. After a miss it rests for a few rows,
 * so a file whose rows it mostly misses pays little for trying.
 */
export class SureRows {
  private version = -1;
  private regex: RegExp | undefined;
  /** Calls to wait before the regex is made again; the wait doubles each time, so a file whose types keep changing
   * has its regex made a logarithmic number of times, not once per change. */
  private wait = 0;
  private nextWait = SURE_ROWS_FIRST_WAIT;

  constructor(
    private readonly delimiter: string,
    private readonly newline: "\n" | "\r\n",
  ) {}

  /** The regex for the sink's sure rows just now, or undefined. Called once per row read the usual way. */
  regexFor(sink: SpanSink): RegExp | undefined {
    if (this.wait > 0) this.wait--;
    const sure = sink.sureRow?.();
    if (sure === undefined || !this.fits(sure.values.length)) return undefined;
    if (sure.version !== this.version) {
      if (this.wait > 0) return undefined;
      this.version = sure.version;
      const delimiter = escapedCode(this.delimiter);
      const fields = sure.values.map((values) => sureField(values, delimiter));
      const source = `${fields.join(delimiter)}${this.newline === "\n" ? "\\n" : "\\r\\n"}`;
      this.regex = source.length <= SURE_ROWS_MOST_CHARS ? new RegExp(source, "y") : undefined;
      this.wait = this.nextWait;
      this.nextWait *= 2;
    }
    return this.regex;
  }

  /**
   * A one-field row would also match a blank line, which the sink takes
   * otherwise; a delimiter a value can hold would be read as part of it.
   */
  private fits(width: number): boolean {
    return width >= 2 && !SURE_PATTERN_CHARACTERS.test(this.delimiter);
  }
}

/**
 * The longest regex source tried: beyond a few thousand characters V8's
 * match costs more per field than the usual reading (wide rows of dates or
 * timestamps), and making it costs more than it saves.
 */
const SURE_ROWS_MOST_CHARS = 8_000;
/** Rows read the usual way after the regex was made before it is made again for changed types (then twice as many). */
const SURE_ROWS_FIRST_WAIT = 16;
/** Rows to read as usual after the regex missed one before trying it again. */
const SURE_ROWS_REST = 8;

function escapedCode(character: string): string {
  return `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/** One field's regex: a value the pattern matches, quoted or not, or any plain field without CR or LF. */
function sureField({ pattern, empty }: SureValues, delimiter: string): string {
  // A sure value holds no quote, so quoting it changes nothing.
  if (pattern !== null) {
    const value = `(?:${pattern})`;
    return empty ? `(?:${value}|"${value}"|""|)` : `(?:${value}|"${value}")`;
  }
  const quoted = empty ? `"[^"\\r\\n]*(?:""[^"\\r\\n]*)*"` : `"(?:[^"\\r\\n]|"")+"`;
  const unquoted = `[^${delimiter}"\\r\\n]${empty ? "*" : "+"}`;
  return `(?:${quoted}|${unquoted})`;
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
 * copied out once for the type checks (`RowSpans.codes`). With `sureRows`,
 * a row the sink surely takes as it is goes whole to `takeSureRow` instead
 * (see SureRows). `work`, when given, is told how many characters the copy,
 * the searches and the regex covered.
 */
export function scanPlainRows(
  text: string,
  delimiter: string,
  newline: "\n" | "\r\n",
  row: RowSpans,
  sink: SpanSink,
  work?: WorkCounter,
  sureRows?: SureRows,
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
  let sure = sureRows?.regexFor(sink);
  // Rows to read as usual before trying `sure` again, after it missed.
  let rest = 0;
  // Where `sure` missed the row being read as usual, which the reading's own count then covers.
  let missedAt = -1;
  rows: for (;;) {
    if (sure !== undefined && rest === 0) {
      sure.lastIndex = rowStart;
      if (sure.test(text)) {
        scanned += sure.lastIndex - rowStart;
        rowStart = sure.lastIndex;
        if (!sink.takeSureRow!()) {
          stop = "stopped";
          break;
        }
        continue;
      }
      rest = SURE_ROWS_REST;
      missedAt = rowStart;
    }
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
        row.push(at + 1, close, escaped, true);
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
      row.push(at, end, false, false);
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
    // A miss looked no further than the row's line, which the reading above covered: counted once more.
    if (missedAt === rowStart) scanned += next - rowStart;
    rowStart = next;
    if (!sink.takeSpans(row)) {
      stop = "stopped";
      break;
    }
    if (sureRows !== undefined) {
      sure = sureRows.regexFor(sink);
      if (rest > 0) rest--;
    }
  }
  if (work) work.scanned += scanned;
  result.consumed = rowStart;
  result.stop = stop;
  return result;
}
