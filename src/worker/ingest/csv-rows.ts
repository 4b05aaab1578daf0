import { DELIMITER_CANDIDATES, DELIMITER_SAMPLE_ROWS, detectDelimiter, type DelimiterDetection } from "./csv-delimiter";
import { FallbackParser, type Newline, type ParsedRows, type QuotedEmpty, type RowParser } from "./csv-fallback";
import { RowSpans, SureRows, scanPlainRows, type SpanSink } from "./csv-spans";
import type { WorkCounter } from "./work-counter";

/**
 * Splits CSV text that arrives in pieces into rows, so that the rows do not
 * depend on where the pieces were cut, as papaparse's own streamers do for
 * files and Node streams; this one takes text pushed by a caller that owns
 * the byte stream.
 *
 * How: the text after the last complete row is kept and parsed again with
 * the next piece (`ignoreLastRow`), exactly as papaparse's ChunkStreamer
 * does. Pieces are batched to `MIN_PARSE_CHARS` so small network or
 * decompression chunks do not each pay a parser call, and when a batch
 * completes no row (one very long quoted field), the next attempt waits
 * until the kept text has doubled, which keeps the work linear.
 *
 * The kept text is read in windows that start where a row starts and hold
 * one row of `maxRowChars` and its line break: no search looks further than
 * that, however large a piece is, and a longer row is refused as soon as its
 * window is full, wherever the text was cut.
 *
 * Without a delimiter, the reader waits for the first row and a few
 * after it, and csv-delimiter.ts picks one there.
 *
 * With a sink, plain rows are read in place by csv-spans.ts and handed to
 * it as they are found, and every other row follows as strings, all in file
 * order. Without one, every row is read by the parser (csv-fallback.ts:
 * papaparse's reading in linear time) and returned by `push` and `end`.
 */

/**
 * Rows completed by a piece of text; `malformedRows` lists indexes into `rows` (ascending) whose quoting is broken,
 * `quotedEmpty` the rows (ascending) with fields written `""` (the empty string; an unquoted empty field is NULL).
 */
export interface RowBatch {
  rows: string[][];
  malformedRows: readonly number[];
  quotedEmpty?: readonly QuotedEmpty[];
}

export type ReadRows = ({ ok: true } & RowBatch) | { ok: false; reason: "row-too-long" };

/** Takes every row in file order: plain rows in place (`takeSpans`), the others as strings. False stops the reading. */
export interface RowsSink extends SpanSink {
  takeRows(batch: RowBatch): boolean;
}

export interface ReaderOptions {
  /** Makes the parser for the rows the fast path leaves; by default csv-fallback.ts (tests pass papaparse's own). */
  parser?: (delimiter: string, newline: Newline) => RowParser;
  /** Told how much text the reading looked at (see work-counter.ts). */
  work?: WorkCounter;
}

const MIN_PARSE_CHARS = 64 * 1024;
/** At most this much text after the first row goes into detecting the delimiter (a few rows of a usual file). */
const DELIMITER_SAMPLE_CHARS = 16 * 1024;
const NO_ROWS: ReadRows = { ok: true, rows: [], malformedRows: [] };
const TOO_LONG: ReadRows = { ok: false, reason: "row-too-long" };
const QUOTE = 34;
const LF = 10;
const CR = 13;

/** Streaming CSV row splitter; feed it with `push` and close it with `end`. */
export class CsvRowReader {
  private parser: RowParser | undefined;
  private newline: Newline | undefined;
  private chosenDelimiter: string | undefined;
  // Until a delimiter is chosen, a quote after any candidate opens a quoted field for the line-ending scan.
  private readonly fieldSeparators: number[];
  private firstLineBreakAt = -1;
  // How far the search for the delimiter sample's line breaks went, and how many it found.
  private sampleScanAt = 0;
  private sampleLines = 0;
  // One row of maxRowChars and its line break; known with the line ending.
  private windowChars: number;
  private batchChars: number;
  private pending = "";
  // Whether pending was joined from pieces since it was last searched.
  private joined = false;
  private parseAt: number;
  // The sink asked to stop.
  private stopped = false;
  private refused = false;
  // Rows read since the last push or end, when there is no sink.
  private collected: string[][] = [];
  private collectedMalformed: number[] = [];
  private collectedQuotedEmpty: QuotedEmpty[] = [];
  // Where the line-ending scan stopped, and the quoting state there.
  private scanAt = 0;
  private scanInQuotes = false;
  private scanAtFieldStart = true;
  private readonly spans = new RowSpans();
  private sureRows: SureRows | undefined;
  private readonly makeParser: NonNullable<ReaderOptions["parser"]>;
  private readonly work: WorkCounter | undefined;

  /**
   * `delimiter`: the file's, or what to detect it by (csv-delimiter.ts). `maxRowChars` bounds one row's text
   * (line break excluded), so an unclosed quote cannot hold the whole file in memory.
   */
  constructor(
    private readonly delimiter: string | DelimiterDetection,
    private readonly maxRowChars: number,
    private readonly sink?: RowsSink,
    options: ReaderOptions = {},
  ) {
    if (typeof delimiter === "string") this.chosenDelimiter = delimiter;
    this.fieldSeparators = (typeof delimiter === "string" ? [delimiter] : DELIMITER_CANDIDATES).map((candidate) =>
      candidate.charCodeAt(0),
    );
    const work = options.work;
    this.work = work;
    this.makeParser = options.parser ?? ((delimiter, newline) => new FallbackParser(delimiter, newline, work));
    this.windowChars = maxRowChars + 1;
    this.batchChars = Math.min(MIN_PARSE_CHARS, this.windowChars);
    this.parseAt = this.batchChars;
  }

  /** Adds text; with `flush`, parses now instead of waiting for a full batch. Returns the rows it completed (none with a sink). */
  push(text: string, flush = false): ReadRows {
    if (this.refused) return TOO_LONG;
    if (this.stopped) return NO_ROWS;
    if (this.pending === "") {
      this.pending = text;
    } else {
      this.pending += text;
      this.joined = true;
    }
    if (this.parser === undefined) {
      const start = this.startParser(false, flush);
      if (start !== "started") return start === "too-long" ? this.refuse() : NO_ROWS;
    }
    if (!flush && this.pending.length < this.parseAt) return NO_ROWS;
    return this.parsePending() ? this.takeCollected() : this.refuse();
  }

  /**
   * Parses what is left at the end of the file: a last row without a line
   * break. A line break at the very end closes the last row; it does not
   * open an empty one, so the rows never depend on how the text was cut.
   */
  end(): ReadRows {
    if (this.refused) return TOO_LONG;
    if (this.stopped) return NO_ROWS;
    if (this.parser === undefined && this.startParser(true, true) === "too-long") return this.refuse();
    if (!this.parsePending()) return this.refuse();
    if (this.pending !== "" && !this.stopped) {
      if (this.pending.length > this.maxRowChars) return this.refuse();
      const last = this.parser!.parse(this.pending, 0, false);
      this.pending = "";
      this.deliver(last);
    }
    return this.takeCollected();
  }

  // Once a row was refused the reading is over: later pieces are not looked at.
  private refuse(): ReadRows {
    this.refused = true;
    this.pending = "";
    return TOO_LONG;
  }

  /** The delimiter the rows are read with: the given one, or the detected one once known. */
  get delimiterInUse(): string | undefined {
    return this.chosenDelimiter;
  }

  /**
   * Starts the parser once the line ending is known (and the delimiter: given, or detected on the first
   * row and the sample after it); "wait" until the text tells, "too-long" when the first row cannot end.
   */
  private startParser(atEnd: boolean, flush: boolean): "started" | "wait" | "too-long" {
    if (this.newline === undefined) {
      const found = this.detectNewline(atEnd);
      if (found === undefined && this.scanAt > this.maxRowChars) return "too-long";
      if (found === undefined && !atEnd) return "wait";
      this.newline = found ?? "\n";
    }
    const newline = this.newline;
    if (this.chosenDelimiter === undefined) {
      const sampleEnd = this.delimiterSampleEnd(atEnd || flush);
      if (sampleEnd < 0) return "wait";
      const whole = sampleEnd === this.pending.length;
      const sample = whole ? this.pending : this.pending.slice(0, sampleEnd);
      const detection = this.delimiter as DelimiterDetection;
      this.chosenDelimiter = detectDelimiter(sample, newline, atEnd && whole, detection, this.work);
    }
    this.parser = this.makeParser(this.chosenDelimiter, newline);
    if (newline !== "\r") this.sureRows = new SureRows(this.chosenDelimiter, newline);
    this.windowChars = this.maxRowChars + newline.length;
    this.batchChars = Math.min(MIN_PARSE_CHARS, this.windowChars);
    this.parseAt = this.batchChars;
    return "started";
  }

  /**
   * Where the text to detect the delimiter on ends: after the first row and `DELIMITER_SAMPLE_ROWS` more
   * line breaks (quoted ones counted too: fewer rows, no harm), or `DELIMITER_SAMPLE_CHARS` after the
   * first row, or with `final`, wherever the text ends; -1 while more text is needed. Each call goes on
   * where the last one stopped.
   */
  private delimiterSampleEnd(final: boolean): number {
    const text = this.pending;
    const start = this.firstLineBreakAt < 0 ? text.length : this.firstLineBreakAt + this.newline!.length;
    const full = start + DELIMITER_SAMPLE_CHARS;
    const stop = Math.min(text.length, full);
    const lineBreak = this.newline === "\r" ? CR : LF;
    const from = Math.max(this.sampleScanAt, start);
    let at = from;
    for (; at < stop && this.sampleLines < DELIMITER_SAMPLE_ROWS; at++)
      if (text.charCodeAt(at) === lineBreak) this.sampleLines++;
    if (this.work) this.work.scanned += at - from;
    this.sampleScanAt = at;
    return this.sampleLines >= DELIMITER_SAMPLE_ROWS || at >= full || final ? at : -1;
  }

  /** Reads every complete row of the kept text, a window at a time; false when a row is longer than allowed. */
  private parsePending(): boolean {
    const fast = this.sink !== undefined && this.newline !== "\r";
    // The first search copies joined pieces into one string.
    if (this.joined && this.work) this.work.scanned += this.pending.length;
    this.joined = false;
    for (;;) {
      const pending = this.pending;
      if (pending === "" || this.stopped) return true;
      const cut = pending.length > this.windowChars;
      const text = cut ? pending.slice(0, this.windowChars) : pending;
      let consumed = 0;
      let unusual = !fast;
      if (fast) {
        const scan = scanPlainRows(
          text,
          this.chosenDelimiter!,
          this.newline as "\n" | "\r\n",
          this.spans,
          this.sink!,
          this.work,
          this.sureRows,
        );
        consumed = scan.consumed;
        if (scan.stop === "stopped") this.stopped = true;
        // "incomplete": what is left is the start of a row (no complete row, as the parser would find too).
        unusual = scan.stop === "unusual";
      }
      if (unusual) {
        const parsed = this.parser!.parse(consumed === 0 ? text : text.slice(consumed), 0, true);
        if (parsed.data.length > 0) {
          consumed += parsed.meta.cursor;
          this.deliver(parsed);
        }
      }
      if (consumed > 0) {
        this.pending = pending.slice(consumed);
        if (cut) continue;
        this.parseAt = this.batchChars;
        return true;
      }
      // No complete row at the start of the kept text: too long once it fills a window, else wait until it has doubled.
      if (pending.length >= this.windowChars) return false;
      this.parseAt = Math.min(Math.max(MIN_PARSE_CHARS, pending.length * 2), this.windowChars);
      return true;
    }
  }

  private deliver(parsed: ParsedRows): void {
    const rows = parsed.data;
    if (this.newline === "\n") stripCarriageReturns(rows);
    const malformedRows = malformedRowIndexes(parsed.errors, rows.length);
    const quotedEmpty = parsed.quotedEmpty ?? [];
    if (this.sink) {
      if (!this.sink.takeRows({ rows, malformedRows, quotedEmpty })) this.stopped = true;
      return;
    }
    const offset = this.collected.length;
    if (offset === 0) {
      this.collected = rows;
      this.collectedMalformed = [...malformedRows];
      this.collectedQuotedEmpty = [...quotedEmpty];
      return;
    }
    for (const row of rows) this.collected.push(row);
    for (const index of malformedRows) this.collectedMalformed.push(offset + index);
    for (const { row, fields } of quotedEmpty) this.collectedQuotedEmpty.push({ row: offset + row, fields });
  }

  private takeCollected(): ReadRows {
    if (this.collected.length === 0) return NO_ROWS;
    const batch: ReadRows = {
      ok: true,
      rows: this.collected,
      malformedRows: this.collectedMalformed,
      quotedEmpty: this.collectedQuotedEmpty,
    };
    this.collected = [];
    this.collectedMalformed = [];
    this.collectedQuotedEmpty = [];
    return batch;
  }

  /**
   * Picks the file's line ending from its first line break outside quotes,
   * like papaparse's own guess but without needing the whole first chunk.
   * Returns undefined while the text seen so far cannot tell yet. Looks no
   * further than a first row of `maxRowChars` could reach: `scanAt` past
   * it means the first row is too long.
   */
  private detectNewline(atEnd: boolean): Newline | undefined {
    const text = this.pending;
    const separators = this.fieldSeparators;
    const end = Math.min(text.length, this.maxRowChars + 1);
    let inQuotes = this.scanInQuotes;
    let atFieldStart = this.scanAtFieldStart;
    const from = this.scanAt;
    let i = from;
    let found: Newline | undefined;
    for (; i < end; i++) {
      const code = text.charCodeAt(i);
      if (inQuotes) {
        if (code !== QUOTE) continue;
        // A quote as the last character may be the first half of an escaped "".
        if (i + 1 === text.length) break;
        if (text.charCodeAt(i + 1) === QUOTE) i++;
        else inQuotes = false;
        continue;
      }
      if (code === QUOTE && atFieldStart) {
        inQuotes = true;
        atFieldStart = false;
        continue;
      }
      if (code === LF) {
        found = "\n";
        break;
      }
      if (code === CR) {
        if (i + 1 < text.length) found = text.charCodeAt(i + 1) === LF ? "\r\n" : "\r";
        break;
      }
      atFieldStart = separators.includes(code);
    }
    if (this.work) this.work.scanned += i - from + 1;
    if (found) {
      this.firstLineBreakAt = i;
      return found;
    }
    this.scanAt = i;
    this.scanInQuotes = inQuotes;
    this.scanAtFieldStart = atFieldStart;
    if (!atEnd) return undefined;
    return i < text.length && text.charCodeAt(i) === CR ? "\r" : undefined;
  }
}

// A file detected as LF-separated may still end some lines with CRLF; the CR is not data.
function stripCarriageReturns(rows: string[][]): void {
  for (const row of rows) {
    const last = row.length - 1;
    const field = row[last]!;
    if (field.charCodeAt(field.length - 1) === CR) row[last] = field.slice(0, -1);
  }
}

function malformedRowIndexes(errors: ParsedRows["errors"], rowCount: number): readonly number[] {
  if (errors.length === 0) return [];
  const indexes = new Set<number>();
  // Errors on the unfinished last row are dropped: that row is parsed again with more text.
  for (const error of errors) if (error.row < rowCount) indexes.add(error.row);
  return [...indexes];
}
